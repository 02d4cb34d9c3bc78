package s3

import (
	"errors"
	"strings"
	"testing"
)

func TestRejectsMalformedListResponses(t *testing.T) {
	cases := map[string]string{
		"wrong root":        `<Other><IsTruncated>false</IsTruncated></Other>`,
		"missing truncated": `<ListBucketResult><Contents><Key>p/a</Key><Size>1</Size></Contents></ListBucketResult>`,
		"bad truncated":     `<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>`,
		"missing size":      `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p/a</Key></Contents></ListBucketResult>`,
		"two keys":          `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a</Key><Key>b</Key><Size>1</Size></Contents></ListBucketResult>`,
		"bad size":          `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a</Key><Size>12x</Size></Contents></ListBucketResult>`,
		"negative size":     `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>`,
		"two tokens":        `<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>a</NextContinuationToken><NextContinuationToken>b</NextContinuationToken></ListBucketResult>`,
		"trailing junk":     `<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>junk`,
		"second root":       `<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult><ListBucketResult/>`,
		"unclosed":          `<ListBucketResult><IsTruncated>false</IsTruncated>`,
		"empty":             ``,
		"child in key":      `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key><b/></Key><Size>1</Size></Contents></ListBucketResult>`,
		"unknown entity":    `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>&bogus;</Key><Size>1</Size></Contents></ListBucketResult>`,
		"size overflow":     `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a</Key><Size>99999999999999999999</Size></Contents></ListBucketResult>`,
	}
	for name, body := range cases {
		if _, err := parseListPage([]byte(body)); !errors.Is(err, ErrMalformedList) {
			t.Errorf("%s: err = %v, want ErrMalformedList", name, err)
		}
	}
}

func TestListKeysAcceptsWhitespaceInTags(t *testing.T) {
	body := `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/" >
  <Name>b</Name>
  <Contents >
    <Key >p/a&amp;b</Key >
    <Size > 12 </Size >
    <ETag>&#34;x&#34;</ETag>
  </Contents>
  <Contents><Key><![CDATA[p/c<d]]></Key><Size>0</Size></Contents>
  <IsTruncated > TRUE </IsTruncated >
  <NextContinuationToken>1/abc%2Fdef+==</NextContinuationToken>
</ListBucketResult >
`
	p, err := parseListPage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 2 || p.Entries[0] != (listEntry{"p/a&b", 12}) || p.Entries[1] != (listEntry{"p/c<d", 0}) {
		t.Fatalf("entries %+v", p.Entries)
	}
	if !p.Truncated || p.NextToken != "1/abc%2Fdef+==" {
		t.Fatalf("truncated %v token %q", p.Truncated, p.NextToken)
	}
}

func TestAcceptsEmptyCompleteListResponse(t *testing.T) {
	p, err := parseListPage([]byte(`<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`))
	if err != nil || len(p.Entries) != 0 || p.Truncated {
		t.Fatalf("page %+v err %v", p, err)
	}
}

func FuzzParseListPage(f *testing.F) {
	f.Add([]byte(`<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken><Contents><Key>a</Key><Size>1</Size></Contents></ListBucketResult>`))
	f.Add([]byte(`<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>`))
	f.Add([]byte(`<ListBucketResult><Contents><Key>&amp;</Key><Size>00</Size></Contents><IsTruncated>False</IsTruncated></ListBucketResult>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseListPage(body)
		if err != nil {
			if !errors.Is(err, ErrMalformedList) {
				t.Fatalf("error %v does not wrap ErrMalformedList", err)
			}
			return
		}
		for _, e := range p.Entries {
			if e.Size < 0 {
				t.Fatalf("negative size %d", e.Size)
			}
		}
		if !strings.Contains(string(body), "IsTruncated") {
			t.Fatal("accepted a page without IsTruncated")
		}
	})
}
