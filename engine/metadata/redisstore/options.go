package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by OptionsFromEnv (Mooncake's names).
const (
	EnvPassword = "MC_REDIS_PASSWORD"
	EnvUsername = "MC_REDIS_USERNAME"
	EnvDBIndex  = "MC_REDIS_DB_INDEX"
)

// MaxDB is the highest database index Mooncake accepts in
// MC_REDIS_DB_INDEX (it keeps the index in a uint8).
const MaxDB = 255

// Defaults applied by Open to zero Options fields.
const (
	DefaultDialTimeout = 5 * time.Second
	DefaultTimeout     = 5 * time.Second
)

// Options configure a redis store. The zero value connects without
// authentication to database 0 with the default timeouts.
type Options struct {
	// Password is sent with AUTH when not empty (MC_REDIS_PASSWORD). It
	// never appears in an error message.
	Password string
	// Username is the ACL user sent with the password (MC_REDIS_USERNAME);
	// empty means the default user. It is ignored without a Password.
	Username string
	// DB is the database index selected on every connection
	// (MC_REDIS_DB_INDEX), 0..MaxDB.
	DB int
	// DialTimeout bounds connecting and the initial PING of Open;
	// default DefaultDialTimeout.
	DialTimeout time.Duration
	// Timeout bounds each Get, Put or Delete whose context has no earlier
	// deadline; default DefaultTimeout.
	Timeout time.Duration
}

// withDefaults fills zero durations and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.DialTimeout < 0:
		return o, fmt.Errorf("%w: DialTimeout %v is negative", ErrBadOptions, o.DialTimeout)
	case o.Timeout < 0:
		return o, fmt.Errorf("%w: Timeout %v is negative", ErrBadOptions, o.Timeout)
	case o.DB < 0 || o.DB > MaxDB:
		return o, fmt.Errorf("%w: DB %d is outside 0..%d", ErrBadOptions, o.DB, MaxDB)
	}
	return o, nil
}

// OptionsFromEnv reads MC_REDIS_PASSWORD, MC_REDIS_USERNAME and
// MC_REDIS_DB_INDEX through lookup (os.LookupEnv in production). Unset or
// empty variables leave the zero value. A DB index that is not a decimal
// integer in 0..MaxDB is an error wrapping ErrBadOptions that names the
// variable and the value (Mooncake logs and falls back to 0 instead; Ferry
// refuses to silently use another database). Timeouts are left zero, so
// Open applies the defaults.
func OptionsFromEnv(lookup func(string) (string, bool)) (Options, error) {
	var o Options
	if lookup == nil {
		return o, fmt.Errorf("%w: nil lookup function", ErrBadOptions)
	}
	if v, ok := lookup(EnvPassword); ok {
		o.Password = v
	}
	if v, ok := lookup(EnvUsername); ok {
		o.Username = v
	}
	if v, ok := lookup(EnvDBIndex); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > MaxDB {
			return Options{}, fmt.Errorf("%w: %s=%q: want an integer in 0..%d", ErrBadOptions, EnvDBIndex, v, MaxDB)
		}
		o.DB = n
	}
	return o, nil
}
