// Package config reads the settings shared by Ferry's offload services (the
// owner and the requester) from the environment, with Mooncake's variable
// names and rules, and from the JSON file named by MOONCAKE_CONFIG_PATH.
//
// Precedence: a field present in the JSON file wins over its environment
// variable, which wins over the built-in default. An invalid typed value
// (a malformed number or boolean, or one out of range) is reported as a
// warning and the default is used, as Mooncake does; Load never fails on
// such a value. It fails only when the JSON file cannot be read or parsed.
package config
