package qwen

// AuthKind is which token a connection presented.
type AuthKind uint8

const (
	AuthPeer       AuthKind = iota + 1 // the inbox's ipcToken: an ordinary peer
	AuthChild                          // the child token: a process we started
	AuthController                     // a controller grant: a program the user trusts
)

// originWire is the origin attribute each kind puts on a delivered message
// (an ordinary peer has none).
var originWire = [...]string{AuthPeer: "peer", AuthChild: "own-process", AuthController: "controller"}

// String returns the origin spelling: "own-process" for a child.
func (k AuthKind) String() string { return wireName(originWire[:], int(k), "auth") }

// Origin is what a connection's auth line established: never read off a
// frame.
type Origin struct {
	Kind       AuthKind
	Controller Controller // with AuthController: the grant's id and label
}

// ControllerVerifier resolves a presented controller token to its grant.
// *Controllers is one, for our own grants or for $QWEN_HOME's.
type ControllerVerifier interface {
	Verify(token string) (Controller, bool)
}

// MaxAuthLine is the longest first line an inbox parses. A genuine auth
// line is under 100 bytes (a 68-character controller token is the longest);
// anything longer is refused before a parser sees it, so bytes from a
// connection that has not authenticated cost a length check and nothing
// more.
const MaxAuthLine = 1 << 10

// Authenticator checks a connection's first non-blank line.
type Authenticator struct {
	IPCToken    Token                // published in our record
	ChildToken  Token                // handed to processes we start
	Controllers []ControllerVerifier // grants, consulted in order
}

// Authenticate reads the first non-blank line of a connection: an auth line
// whose token is our ipcToken (AuthPeer), our child token (AuthChild) or a
// controller grant (AuthController), checked in that order, each in
// constant time. ok false means the connection must be closed at once,
// without a word: the line was longer than MaxAuthLine, was not an auth
// line, or its token matched nothing.
func (a Authenticator) Authenticate(line []byte) (o Origin, ok bool) {
	if len(line) > MaxAuthLine {
		return Origin{}, false // refused unparsed: no token is that long
	}
	l, err := ParseLine(line)
	if err != nil || l.Auth == nil {
		return Origin{}, false
	}
	tok := l.Auth.Token
	peer := a.IPCToken != "" && a.IPCToken.Equal(tok)
	child := a.ChildToken != "" && a.ChildToken.Equal(tok)
	var ctl Controller
	var isCtl bool
	for _, v := range a.Controllers {
		if c, found := v.Verify(string(tok)); found && !isCtl {
			ctl, isCtl = c, true
		}
	}
	switch {
	case peer:
		return Origin{Kind: AuthPeer}, true
	case child:
		return Origin{Kind: AuthChild}, true
	case isCtl:
		return Origin{Kind: AuthController, Controller: ctl}, true
	}
	return Origin{}, false
}
