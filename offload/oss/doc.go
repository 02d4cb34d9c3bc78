// Package oss is Ferry's Alibaba Cloud OSS adapter. It signs every request
// with OSS V4 (OSS4-HMAC-SHA256, UNSIGNED-PAYLOAD, no Content-Type sent),
// builds path-style or virtual-host URLs and sends each path byte for
// byte, reads objects with standard-range GETs ("x-oss-range-behavior:
// standard") straight into caller memory, lists with encoding-type=url
// across all pages, and reads its configuration from MOONCAKE_OSS_*
// variables with OSS_* aliases, exactly as Mooncake's OSS adapter does. It
// never retries a request (apart from net/http's resend of a request that
// died on a reused keep-alive connection before any reply).
//
// Beyond the reference adapter it can split large GETs into parallel
// ranges, upload large objects with multipart upload, take refreshable
// credentials, and check x-oss-hash-crc64ecma.
//
// Secrets never appear in a log line, an error string or fmt output of a
// Config.
package oss
