// Package redisstore is the redis metadata.Store: Mooncake's central
// metadata service for "redis://host:port" server strings.
//
// Values are kept exactly as Mooncake's redis plugin keeps them: the JSON
// text is the plain string value of the key itself (SET key json, GET key,
// DEL key), in the database selected by MC_REDIS_DB_INDEX, so Mooncake and
// Ferry engines can share one redis.
package redisstore
