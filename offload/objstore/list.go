package objstore

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ListEntry is one <Contents> of a ListObjectsV2 page: the key exactly as
// the document holds it (entities decoded, still URL-encoded when the
// request asked for encoding-type=url) and its size.
type ListEntry struct {
	Key  string
	Size int64
}

// ListPage is one parsed ListObjectsV2 page.
type ListPage struct {
	Entries   []ListEntry
	Truncated bool
	NextToken string // raw NextContinuationToken text, "" if absent
}

// ErrMalformedList is wrapped by every ParseListV2 error.
var ErrMalformedList = errors.New("malformed ListBucketResult")

// ParseListV2 parses a ListObjectsV2 reply strictly: a well-formed
// document with exactly one root ListBucketResult (any namespace); every
// Contents holds exactly one Key and one Size (a trimmed decimal);
// IsTruncated is present once and is true or false (trimmed, any case);
// NextContinuationToken appears at most once; nothing but whitespace,
// comments and processing instructions follows the root. Entities and
// CDATA are decoded. Errors wrap ErrMalformedList and never panic.
func ParseListV2(doc []byte) (ListPage, error) {
	var page ListPage
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	sawRoot, sawTrunc, sawToken := false, false, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return page, fmt.Errorf("%w: %v", ErrMalformedList, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if sawRoot {
				return page, fmt.Errorf("%w: content after the root element", ErrMalformedList)
			}
			if t.Name.Local != "ListBucketResult" {
				return page, fmt.Errorf("%w: root element is %q", ErrMalformedList, t.Name.Local)
			}
			sawRoot = true
			if err := parseRoot(d, &page, &sawTrunc, &sawToken); err != nil {
				return page, err
			}
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return page, fmt.Errorf("%w: text outside the root element", ErrMalformedList)
			}
		case xml.Comment, xml.ProcInst, xml.Directive:
		default:
			return page, fmt.Errorf("%w: unexpected token", ErrMalformedList)
		}
	}
	if !sawRoot {
		return page, fmt.Errorf("%w: no ListBucketResult element", ErrMalformedList)
	}
	if !sawTrunc {
		return page, fmt.Errorf("%w: IsTruncated is missing", ErrMalformedList)
	}
	return page, nil
}

func parseRoot(d *xml.Decoder, page *ListPage, sawTrunc, sawToken *bool) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrMalformedList, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			switch t.Name.Local {
			case "Contents":
				ent, err := parseContents(d)
				if err != nil {
					return err
				}
				page.Entries = append(page.Entries, ent)
			case "IsTruncated":
				if *sawTrunc {
					return fmt.Errorf("%w: IsTruncated appears twice", ErrMalformedList)
				}
				*sawTrunc = true
				s, err := text(d)
				if err != nil {
					return err
				}
				switch strings.ToLower(TrimASCIISpace(s)) {
				case "true":
					page.Truncated = true
				case "false":
				default:
					return fmt.Errorf("%w: IsTruncated is %q", ErrMalformedList, s)
				}
			case "NextContinuationToken":
				if *sawToken {
					return fmt.Errorf("%w: NextContinuationToken appears twice", ErrMalformedList)
				}
				*sawToken = true
				s, err := text(d)
				if err != nil {
					return err
				}
				page.NextToken = s
			default:
				if err := d.Skip(); err != nil {
					return fmt.Errorf("%w: %v", ErrMalformedList, err)
				}
			}
		}
	}
}

func parseContents(d *xml.Decoder) (ListEntry, error) {
	var ent ListEntry
	keys, sizes := 0, 0
	for {
		tok, err := d.Token()
		if err != nil {
			return ent, fmt.Errorf("%w: %v", ErrMalformedList, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			if keys != 1 || sizes != 1 {
				return ent, fmt.Errorf("%w: Contents needs exactly one Key and one Size", ErrMalformedList)
			}
			return ent, nil
		case xml.StartElement:
			switch t.Name.Local {
			case "Key":
				keys++
				if ent.Key, err = text(d); err != nil {
					return ent, err
				}
			case "Size":
				sizes++
				s, err := text(d)
				if err != nil {
					return ent, err
				}
				s = TrimASCIISpace(s)
				n, perr := strconv.ParseInt(s, 10, 64)
				if perr != nil || n < 0 || s == "" || s[0] == '+' {
					return ent, fmt.Errorf("%w: Size %q is not a decimal", ErrMalformedList, s)
				}
				ent.Size = n
			default:
				if err := d.Skip(); err != nil {
					return ent, fmt.Errorf("%w: %v", ErrMalformedList, err)
				}
			}
		}
	}
}

// text returns the character data of the current element up to its end;
// a nested element is an error.
func text(d *xml.Decoder) (string, error) {
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrMalformedList, err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.EndElement:
			return b.String(), nil
		case xml.StartElement:
			return "", fmt.Errorf("%w: unexpected element <%s> inside a value", ErrMalformedList, t.Name.Local)
		}
	}
}

// ListKeys lists every object under the key prefix, following
// continuation tokens (URI-decoded first when DecodeListToken), and
// returns logical keys with sizes. A transport error is
// DFS_SERVICE_UNAVAILABLE; a non-2xx status, a malformed page, a key
// outside the prefix, or a truncated page without a (new) token is
// FILE_READ_FAIL.
func (e *Executor) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	var keys []KeyInfo
	token := ""
	seen := map[string]bool{}
	for {
		params := []QueryParam{{"encoding-type", "url"}, {"list-type", "2"}, {"max-keys", "1000"},
			{"prefix", e.cfg.Keys.PhysicalPrefix()}}
		if token != "" {
			params = append(params, QueryParam{"continuation-token", token})
		}
		c := Call{Method: http.MethodGet, Query: CanonicalQuery(params, e.cfg.QueryEmptyEquals), ReadAll: true}
		o := e.Do(ctx, &c)
		switch {
		case o.Err != nil:
			return nil, e.fail(CodeDFSServiceUnavailable, "LIST", &c, &o, "transfer failed")
		case o.Status/100 != 2:
			return nil, e.fail(CodeFileReadFail, "LIST", &c, &o, "unexpected status")
		}
		page, err := ParseListV2(o.Body)
		if err != nil {
			return nil, &Error{Code: CodeFileReadFail, Op: "LIST", Status: o.Status, Msg: "bad listing", Err: err}
		}
		for _, ent := range page.Entries {
			logical, err := e.cfg.Keys.Logical(URIDecode(ent.Key))
			if err != nil {
				return nil, err
			}
			keys = append(keys, KeyInfo{Key: logical, Size: ent.Size})
		}
		if !page.Truncated {
			return keys, nil
		}
		token = page.NextToken
		if e.cfg.DecodeListToken {
			token = URIDecode(token)
		}
		if token == "" {
			return nil, Errorf(CodeFileReadFail, "LIST", "", "truncated listing without a continuation token")
		}
		if seen[token] {
			return nil, Errorf(CodeFileReadFail, "LIST", "", "listing repeated a continuation token")
		}
		seen[token] = true
	}
}
