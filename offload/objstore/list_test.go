package objstore

import (
	"errors"
	"testing"
)

func TestParseListV2(t *testing.T) {
	doc := `<?xml version="1.0"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/" >
  <Name>b</Name><Contents><Key> p/a&amp;b </Key><ETag>&#34;x&#34;</ETag><Size> 12 </Size></Contents>
  <Contents><Key><![CDATA[p/<c>]]></Key><Size>0</Size></Contents>
  <IsTruncated> True </IsTruncated><NextContinuationToken>t%2B</NextContinuationToken>
</ListBucketResult>
<!-- trailing comment -->`
	p, err := ParseListV2([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 2 || p.Entries[0] != (ListEntry{" p/a&b ", 12}) || p.Entries[1] != (ListEntry{"p/<c>", 0}) ||
		!p.Truncated || p.NextToken != "t%2B" {
		t.Fatalf("%+v", p)
	}
	if p, err := ParseListV2([]byte("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>")); err != nil || len(p.Entries) != 0 {
		t.Fatal(p, err)
	}
}

func TestParseListV2RejectsMalformed(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":            "",
		"wrong root":       "<Other><IsTruncated>false</IsTruncated></Other>",
		"unclosed":         "<ListBucketResult><IsTruncated>false</IsTruncated>",
		"no truncated":     "<ListBucketResult></ListBucketResult>",
		"bad truncated":    "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
		"missing size":     "<ListBucketResult><Contents><Key>a</Key></Contents><IsTruncated>false</IsTruncated></ListBucketResult>",
		"two keys":         "<ListBucketResult><Contents><Key>a</Key><Key>b</Key><Size>1</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>",
		"bad size":         "<ListBucketResult><Contents><Key>a</Key><Size>1x</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>",
		"negative size":    "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>",
		"two tokens":       "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>a</NextContinuationToken><NextContinuationToken>b</NextContinuationToken></ListBucketResult>",
		"trailing junk":    "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>junk",
		"second root":      "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult><ListBucketResult/>",
		"nested key":       "<ListBucketResult><Contents><Key><b/></Key><Size>1</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>",
		"undefined entity": "<ListBucketResult><Contents><Key>&nope;</Key><Size>1</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>",
	} {
		if _, err := ParseListV2([]byte(doc)); !errors.Is(err, ErrMalformedList) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzParseListV2 checks that no document makes the parser panic and that
// an accepted page is self-consistent.
func FuzzParseListV2(f *testing.F) {
	f.Add([]byte("<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents><IsTruncated>true</IsTruncated><NextContinuationToken>x</NextContinuationToken></ListBucketResult>"))
	f.Add([]byte("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"))
	f.Add([]byte("<a><![CDATA[x]]></a>"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := ParseListV2(doc)
		if err != nil {
			if !errors.Is(err, ErrMalformedList) {
				t.Fatalf("error does not wrap ErrMalformedList: %v", err)
			}
			return
		}
		for _, e := range p.Entries {
			if e.Size < 0 {
				t.Fatalf("negative size %d", e.Size)
			}
		}
	})
}
