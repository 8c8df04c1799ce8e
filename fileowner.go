package throttled

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrFileOwned is wrapped by the error of CheckImport when an instance
// with config.source: file owns the store: whatever is imported, that
// instance puts its file back at its next reload or restart.
var ErrFileOwned = errors.New("throttled: the config store is owned by an instance with config.source: file")

// FileOwner is the record an instance with config.source: file keeps in
// the store (<prefix>{config}:owner) each time it makes the store equal to
// its file; an instance in store mode removes it.
type FileOwner struct {
	Instance string    `json:"instance"` // host-pid
	Since    time.Time `json:"since"`    // its last reconcile
}

// ownerRecord writes and clears this instance's FileOwner.
type ownerRecord struct {
	rdb redis.UniversalClient
	key string
	me  string
}

func newOwnerRecord(rdb redis.UniversalClient, prefix string) *ownerRecord {
	host, _ := os.Hostname()
	return &ownerRecord{rdb: rdb, key: ownerKey(prefix), me: host + "-" + strconv.Itoa(os.Getpid())}
}

// ownerKey shares the config document's hash slot.
func ownerKey(prefix string) string { return prefix + "{config}:owner" }

func (o *ownerRecord) claim(ctx context.Context) error {
	b, err := json.Marshal(FileOwner{Instance: o.me, Since: time.Now().UTC()})
	if err != nil {
		return err
	}
	return o.rdb.Set(ctx, o.key, b, 0).Err()
}

func (o *ownerRecord) clear(ctx context.Context) error { return o.rdb.Del(ctx, o.key).Err() }

// CheckImport is what `throttled config import` asks before writing the
// store under prefix: an error wrapping ErrFileOwned, naming the owner,
// when an instance in file mode owns it; nil when none does.
func CheckImport(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	b, err := rdb.Get(ctx, ownerKey(prefix)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("throttled: reading the config store's owner: %w", err)
	}
	var o FileOwner
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("throttled: the config store's owner record %s: %w", ownerKey(prefix), err)
	}
	return fmt.Errorf("%w (instance %s, since %s): its file is authoritative and would silently undo the import "+
		"at its next reload or restart; change that file instead, or --force to override it until then",
		ErrFileOwned, o.Instance, o.Since.Format(time.RFC3339))
}
