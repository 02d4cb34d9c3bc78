package s3

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrMalformedList is wrapped by parseListPage errors.
var ErrMalformedList = errors.New("s3: malformed ListObjectsV2 response")

// listEntry is one <Contents> of a ListObjectsV2 page. Key is the XML text
// (entities and CDATA decoded), still URL-encoded by encoding-type=url.
type listEntry struct {
	Key  string
	Size int64
}

// listPage is one parsed ListObjectsV2 page.
type listPage struct {
	Entries   []listEntry
	Truncated bool
	// NextToken is the NextContinuationToken text, unchanged.
	NextToken string
}

// parseListPage parses a ListObjectsV2 body strictly: one root
// ListBucketResult (any namespace), each Contents with exactly one Key and
// one Size (a trimmed decimal), a mandatory IsTruncated of true or false
// (trimmed, any case), at most one NextContinuationToken, and nothing but
// whitespace, comments or processing instructions outside the root.
// Unknown elements are skipped. Errors wrap ErrMalformedList.
func parseListPage(body []byte) (listPage, error) {
	var p listPage
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	sawRoot, sawTrunc, sawToken := false, false, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return listPage{}, fmt.Errorf("%w: %v", ErrMalformedList, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if sawRoot {
				return listPage{}, fmt.Errorf("%w: second root element <%s>", ErrMalformedList, t.Name.Local)
			}
			if t.Name.Local != "ListBucketResult" {
				return listPage{}, fmt.Errorf("%w: root element is <%s>, want <ListBucketResult>", ErrMalformedList, t.Name.Local)
			}
			sawRoot = true
			if err := parseListRoot(d, &p, &sawTrunc, &sawToken); err != nil {
				return listPage{}, err
			}
		case xml.CharData:
			if len(bytes.Trim(t, " \t\r\n")) != 0 {
				return listPage{}, fmt.Errorf("%w: text outside the root element", ErrMalformedList)
			}
		case xml.Directive:
			return listPage{}, fmt.Errorf("%w: unexpected directive", ErrMalformedList)
		}
	}
	if !sawRoot {
		return listPage{}, fmt.Errorf("%w: no ListBucketResult element", ErrMalformedList)
	}
	if !sawTrunc {
		return listPage{}, fmt.Errorf("%w: IsTruncated is missing", ErrMalformedList)
	}
	return p, nil
}

func parseListRoot(d *xml.Decoder, p *listPage, sawTrunc, sawToken *bool) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrMalformedList, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.CharData:
			if len(bytes.Trim(t, " \t\r\n")) != 0 {
				return fmt.Errorf("%w: stray text in ListBucketResult", ErrMalformedList)
			}
		case xml.StartElement:
			switch t.Name.Local {
			case "Contents":
				e, err := parseContents(d)
				if err != nil {
					return err
				}
				p.Entries = append(p.Entries, e)
			case "IsTruncated":
				if *sawTrunc {
					return fmt.Errorf("%w: IsTruncated appears twice", ErrMalformedList)
				}
				*sawTrunc = true
				s, err := leafText(d, "IsTruncated")
				if err != nil {
					return err
				}
				switch strings.ToLower(strings.Trim(s, asciiSpace)) {
				case "true":
					p.Truncated = true
				case "false":
				default:
					return fmt.Errorf("%w: IsTruncated is %q, want true or false", ErrMalformedList, s)
				}
			case "NextContinuationToken":
				if *sawToken {
					return fmt.Errorf("%w: NextContinuationToken appears twice", ErrMalformedList)
				}
				*sawToken = true
				s, err := leafText(d, "NextContinuationToken")
				if err != nil {
					return err
				}
				p.NextToken = s
			default:
				if err := d.Skip(); err != nil {
					return fmt.Errorf("%w: %v", ErrMalformedList, err)
				}
			}
		}
	}
}

func parseContents(d *xml.Decoder) (listEntry, error) {
	var e listEntry
	sawKey, sawSize := false, false
	for {
		tok, err := d.Token()
		if err != nil {
			return e, fmt.Errorf("%w: %v", ErrMalformedList, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			if !sawKey || !sawSize {
				return e, fmt.Errorf("%w: Contents without Key or Size", ErrMalformedList)
			}
			return e, nil
		case xml.StartElement:
			switch t.Name.Local {
			case "Key":
				if sawKey {
					return e, fmt.Errorf("%w: Contents has two Key elements", ErrMalformedList)
				}
				sawKey = true
				if e.Key, err = leafText(d, "Key"); err != nil {
					return e, err
				}
			case "Size":
				if sawSize {
					return e, fmt.Errorf("%w: Contents has two Size elements", ErrMalformedList)
				}
				sawSize = true
				s, err := leafText(d, "Size")
				if err != nil {
					return e, err
				}
				s = strings.Trim(s, asciiSpace)
				if s == "" || strings.TrimLeft(s, "0123456789") != "" {
					return e, fmt.Errorf("%w: Size %q is not a decimal", ErrMalformedList, s)
				}
				if e.Size, err = strconv.ParseInt(s, 10, 64); err != nil {
					return e, fmt.Errorf("%w: Size %q out of range", ErrMalformedList, s)
				}
			default:
				if err := d.Skip(); err != nil {
					return e, fmt.Errorf("%w: %v", ErrMalformedList, err)
				}
			}
		}
	}
}

// leafText reads the text of an element that must have no child elements.
func leafText(d *xml.Decoder, name string) (string, error) {
	var b []byte
	for {
		tok, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrMalformedList, err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			b = append(b, t...)
		case xml.EndElement:
			return string(b), nil
		case xml.StartElement:
			return "", fmt.Errorf("%w: <%s> inside <%s>", ErrMalformedList, t.Name.Local, name)
		}
	}
}
