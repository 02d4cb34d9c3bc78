// Package s3 is Ferry's S3 object-storage adapter. It signs requests with
// AWS Signature Version 4 (AWS4-HMAC-SHA256, UNSIGNED-PAYLOAD), builds
// path-style or virtual-host URLs and sends every path byte for byte, parses
// ListObjectsV2 responses strictly, reads its configuration from the
// MOONCAKE_S3_* variables (with the standard AWS_* variables as fallback),
// and retries transient failures the way Mooncake's REST engine does.
//
// Beyond the reference adapter it uploads large objects with multipart
// upload and verifies S3 checksums (CRC32C) when the server returns them.
//
// Secrets (the secret key and the session token) never appear in a log
// line, an error string or the output of fmt on a Config.
package s3
