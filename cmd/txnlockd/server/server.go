package server

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/mysql"
	"vitess.io/vitess/go/vt/sqlparser"
	"vitess.io/vitess/go/vt/vtenv"
)

// Version is the server version the handshake and VERSION() report.
const Version = "8.0.40-txnlockd"

// Options configure a Server. Every zero field means its documented
// default, but Validate wants a way in: a user with a password, or
// AllowEmptyRoot (root without a password is allowed only when asked).
type Options struct {
	// Addr is the TCP listen address. Default: "127.0.0.1:3306".
	Addr string
	// Users maps user names to passwords (mysql_native_password). An
	// empty password is allowed only with AllowEmptyRoot for root.
	// Default: none.
	Users map[string]string
	// AllowEmptyRoot lets root connect without a password. Default: false.
	AllowEmptyRoot bool
	// Engine configures storage and locking. Default: its defaults.
	Engine engine.Options
	// DelayRules delay every statement of a digest (ProxySQL's
	// mysql_query_rules delay; lockbench run --delay-rule). Default: none.
	DelayRules []DelayRule
}

// DelayRule delays the statements of one digest: Digest is a digest id
// ("0x...") or a digest text, normalized as the server normalizes
// statements (every literal becomes ?).
type DelayRule struct {
	Digest string
	Delay  time.Duration
}

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:3306"
	}
	o.Engine.EnsureDefaults()
}

// Validate reports every problem with o.
func (o *Options) Validate() error {
	var errs []error
	if len(o.Users) == 0 && !o.AllowEmptyRoot {
		errs = append(errs, errors.New("no users: give a user and password, or allow root without a password"))
	}
	for u, p := range o.Users {
		if p == "" && !(u == "root" && o.AllowEmptyRoot) {
			errs = append(errs, fmt.Errorf("user %q has an empty password (only root, and only when allowed)", u))
		}
	}
	for _, r := range o.DelayRules {
		if r.Delay < 0 || strings.TrimSpace(r.Digest) == "" {
			errs = append(errs, fmt.Errorf("delay rule %q=%v: want a digest and a non-negative delay", r.Digest, r.Delay))
		}
	}
	if err := o.Engine.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("txnlockd: invalid options: %w", errors.Join(errs...))
}

// Server serves the MySQL protocol over an Engine.
type Server struct {
	opts   Options
	eng    *engine.Engine
	env    *vtenv.Environment
	parser *sqlparser.Parser
	ln     *mysql.Listener
	done   chan struct{}

	closeOnce sync.Once
	closeErr  error

	stats   counters
	digests digestTable

	// txns maps a transaction's id to its session (the lock tables name
	// the connection of each lock's transaction).
	txns sync.Map // txnlock.TxnID → *session

	// mu guards sessions. Lock order: Server.mu, then a session's mu.
	mu       sync.Mutex
	sessions map[uint32]*session
}

// New opens the engine and listens; Serve accepts connections.
func New(opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	env, err := vtenv.New(vtenv.Options{MySQLServerVersion: Version})
	if err != nil {
		return nil, err
	}
	eng, err := engine.Open(opts.Engine)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, eng: eng, env: env, parser: env.Parser(), sessions: map[uint32]*session{}, done: make(chan struct{})}
	s.digests.init(s.parser, opts.DelayRules)
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		eng.Close()
		return nil, err
	}
	s.ln, err = mysql.NewListenerWithConfig(mysql.ListenerConfig{
		Listener:   ln,
		AuthServer: mysql.NewAuthServerStatic("", s.authConfig(), 0),
		Handler:    s,
	})
	if err != nil {
		ln.Close()
		eng.Close()
		return nil, err
	}
	s.ln.ServerVersion = Version
	return s, nil
}

// authConfig is AuthServerStatic's JSON: every user with its password.
func (s *Server) authConfig() string {
	var b strings.Builder
	b.WriteString("{")
	users := map[string]string{}
	for u, p := range s.opts.Users {
		users[u] = p
	}
	if s.opts.AllowEmptyRoot {
		if _, ok := users["root"]; !ok {
			users["root"] = ""
		}
	}
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	for i, u := range names {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:[{\"Password\":%q}]", u, users[u])
	}
	b.WriteString("}")
	return b.String()
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Engine is the server's engine.
func (s *Server) Engine() *engine.Engine { return s.eng }

// Serve accepts connections until Close.
func (s *Server) Serve() {
	s.ln.Accept()
	close(s.done)
}

// Close stops listening, ends every connection (their statements are
// interrupted, their transactions roll back) and closes the engine. It
// waits for Serve to return: call Serve first. Later calls return the
// first one's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.ln.Close()
		<-s.done
		s.mu.Lock()
		for _, ss := range s.sessions {
			ss.kill(true)
		}
		s.mu.Unlock()
		s.waitSessions()
		s.closeErr = s.eng.Close()
	})
	return s.closeErr
}

// Env is the vitess environment (the Handler interface asks for it).
func (s *Server) Env() *vtenv.Environment { return s.env }
