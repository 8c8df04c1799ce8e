package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/policy"
)

// The config subcommands that read or write the store (Redis), the
// admin API's document that every instance follows:
//
//	throttled config export [--config FILE] [--redis-url URL]   store → YAML on stdout
//	throttled config diff   [--redis-url URL] FILE              store vs FILE; exit 0 same, 1 different, 2 trouble
//	throttled config import [--redis-url URL] [--force] [--if-version N] FILE
//
// They talk to Redis directly, as every instance does: the admin API is a
// view of the same document, and import writes it whole in one atomic swap
// (policy.Replace), which the API has no endpoint for.

// syncTimeout bounds one subcommand's work against the store.
const syncTimeout = 15 * time.Second

// statusError ends the process with its code, after printing err when it
// is not nil (diff's "different" prints nothing more).
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *statusError) Unwrap() error { return e.err }

// syncFlags are the flags of export, diff and import.
type syncFlags struct {
	fs        *flag.FlagSet
	redisURL  string
	config    string // export only
	force     bool   // import only
	ifVersion string // import only
}

func newSyncFlags(cmd string) *syncFlags {
	f := &syncFlags{fs: flag.NewFlagSet("config "+cmd, flag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.StringVar(&f.redisURL, "redis-url", "", "Redis URL (overrides the file's redis.url and THROTTLED_REDIS_URL)")
	switch cmd {
	case "export":
		f.fs.StringVar(&f.config, "config", "", "configuration file whose redis settings to use")
	case "import":
		f.fs.BoolVar(&f.force, "force", false, "write whatever version the store holds, also over an instance in config.source: file mode")
		f.fs.StringVar(&f.ifVersion, "if-version", "", "write only over this store version (default: the version read at start)")
	}
	return f
}

// parse reads flags before and after the positional arguments, which it
// returns; want is how many there must be. With --help it prints the usage
// and returns flag.ErrHelp.
func (f *syncFlags) parse(args []string, want int, usage string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := f.fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: "+usage)
			f.fs.SetOutput(stdout)
			f.fs.PrintDefaults()
			return nil, err
		} else if err != nil {
			return nil, fmt.Errorf("%v\nusage: %s", err, usage)
		}
		if args = f.fs.Args(); len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) != want {
		return nil, errors.New("usage: " + usage)
	}
	return pos, nil
}

// env is the flags as environment overrides, which come last.
func (f *syncFlags) env() []string {
	env := os.Environ()
	if f.redisURL != "" {
		env = append(env, config.EnvPrefix+"REDIS_URL="+f.redisURL)
	}
	return env
}

// syncStore is the store a subcommand works on.
type syncStore struct {
	st    policy.Store
	rdb   redis.UniversalClient
	name  string // the store for messages, without credentials
	close func()
}

// openStore opens the Redis store cfg names.
func openStore(cfg *config.Config) (*syncStore, error) {
	if !cfg.Redis.Configured() {
		return nil, errors.New("no Redis to read: give --redis-url URL, THROTTLED_REDIS_URL or a file with redis.url " +
			"(the embedded store lives inside one serving process: its admin API shows it)")
	}
	rdb, err := throttled.OpenRedis(&cfg.Redis)
	if err != nil {
		return nil, err
	}
	st, err := policy.NewRedisStore(rdb, policy.StoreSettings{Prefix: cfg.Redis.Prefix})
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	name := cfg.Redis.RedactedURL()
	if cfg.Redis.URL == "" {
		name = cfg.Redis.Where()
	}
	return &syncStore{st: st, rdb: rdb, name: name + " prefix " + cfg.Redis.Prefix, close: func() { _ = rdb.Close() }}, nil
}

// load reads the stored configuration as the admin API serves it: a bad
// current document gives the last good one and a note saying so.
func (s *syncStore) load(ctx context.Context) (snap policy.Snapshot, note string, err error) {
	snap, err = policy.Load(ctx, s.st)
	if errors.Is(err, policy.ErrBadStored) && snap.Version > 0 {
		return snap, fmt.Sprintf("the current document is invalid, this is the last good one (%v)", err), nil
	}
	if err != nil {
		return snap, "", fmt.Errorf("store %s: %w", s.name, err)
	}
	return snap, "", nil
}

// describe names a stored version for headers and messages.
func (s *syncStore) describe(snap policy.Snapshot) string {
	if snap.Version == 0 {
		return "store " + s.name + ", empty"
	}
	return fmt.Sprintf("store %s, version %d", s.name, snap.Version)
}

// configExport is `throttled config export`: the stored tiers, rules,
// default and anonymous tier and assignments as YAML on stdout, which
// `config import` reads back as they were.
func configExport(args []string, stdout io.Writer) error {
	const usage = "throttled config export [--config FILE] [--redis-url URL]"
	f := newSyncFlags("export")
	if _, err := f.parse(args, 0, usage, stdout); err != nil {
		return helpIsNoError(err)
	}
	var cfg *config.Config
	var err error
	if f.config != "" {
		cfg, err = config.LoadEnv(f.config, f.env())
	} else {
		cfg, err = config.FromEnv(f.env())
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	s, err := openStore(cfg)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	snap, note, err := s.load(ctx)
	if err == nil && snap.Version == 0 {
		err = fmt.Errorf("store %s is empty: serve seeds it from its file at start", s.name)
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	doc, err := config.RenderPolicy(snap.Config)
	if err != nil {
		return err
	}
	head := fmt.Sprintf("# throttled config export: %s (generation %s), updated %s by %s\n",
		s.describe(snap), snap.Generation, snap.UpdatedAt.Format(time.RFC3339), snap.UpdatedBy)
	if note != "" {
		head += "# note: " + note + "\n"
	}
	_, err = io.WriteString(stdout, head+doc)
	return err
}

func helpIsNoError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// configDiff is `throttled config diff FILE`: the store's tiers, rules and
// assignments against the file's, as a unified diff from the store ("-")
// to the file ("+"), what `config import FILE` would write. Like diff(1) it
// exits 0 when they are the same, 1 when they differ, 2 on trouble.
func configDiff(args []string, stdout io.Writer) error {
	const usage = "throttled config diff [--redis-url URL] FILE"
	f := newSyncFlags("diff")
	pos, err := f.parse(args, 1, usage, stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &statusError{code: 2, err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	d, err := diffFile(ctx, pos[0], f)
	if err != nil {
		return &statusError{code: 2, err: fmt.Errorf("diff: %w", err)}
	}
	if d.text == "" {
		return nil
	}
	if _, err := io.WriteString(stdout, d.text); err != nil {
		return &statusError{code: 2, err: err}
	}
	return &statusError{code: 1}
}

// fileDiff is a file compared with the store.
type fileDiff struct {
	cfg  *config.Config
	snap policy.Snapshot
	text string // the unified diff, "" when the same
}

// diffFile loads path and the store it names (or f's), and compares them.
func diffFile(ctx context.Context, path string, f *syncFlags) (*fileDiff, error) {
	cfg, err := config.LoadEnv(path, f.env())
	if err != nil {
		return nil, fmt.Errorf("%s:\n%w", path, err)
	}
	s, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	defer s.close()
	snap, note, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	text, err := config.PolicyDelta(snap.Config, cfg.Policy(), s.describe(snap), path)
	if err != nil {
		return nil, err
	}
	if note != "" && text != "" {
		text = "# note: " + note + "\n" + text
	}
	return &fileDiff{cfg: cfg, snap: snap, text: text}, nil
}

// configImport is `throttled config import FILE`: it writes the file's
// tiers, rules, default and anonymous tier and assignments into the store
// in one atomic write, only over the version it read first (or
// --if-version), so that a change made meanwhile is not lost unseen.
func configImport(args []string, stdout io.Writer) error {
	const usage = "throttled config import [--redis-url URL] [--force] [--if-version N] FILE"
	f := newSyncFlags("import")
	pos, err := f.parse(args, 1, usage, stdout)
	if err != nil {
		return helpIsNoError(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	d, err := diffFile(ctx, pos[0], f)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	rs := policy.ReplaceSettings{IfVersion: d.snap.Version, Force: f.force, Who: "config import"}
	if f.ifVersion != "" {
		if rs.IfVersion, err = strconv.ParseInt(f.ifVersion, 10, 64); err != nil || rs.IfVersion < 0 {
			return fmt.Errorf("import: --if-version %q: want a store version (0: empty)", f.ifVersion)
		}
	}
	s, err := openStore(d.cfg)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer s.close()
	if err := throttled.CheckImport(ctx, s.rdb, d.cfg.Redis.Prefix); err != nil && !f.force {
		return fmt.Errorf("import: %s: nothing written: %w", pos[0], err)
	}
	snap, wrote, err := policy.Replace(ctx, s.st, d.cfg.Policy(), rs)
	var ve *policy.VersionError
	switch {
	case errors.As(err, &ve):
		return fmt.Errorf("import: store %s is at version %d, not version %d: someone changed it in between; nothing written "+
			"(see the change with `throttled config diff %s`, then import again, or --force)", s.name, ve.Got, ve.Want, pos[0])
	case err != nil:
		return fmt.Errorf("import: %s: nothing written: %w", pos[0], err)
	case !wrote:
		_, err = fmt.Fprintf(stdout, "%s: the store already holds it (%s): nothing written\n", pos[0], s.describe(snap))
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s%s: imported into %s (was version %d)\n", d.text, pos[0], s.describe(snap), d.snap.Version)
	return err
}
