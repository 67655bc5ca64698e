package federated

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/nn"
)

// The wire protocol is a hand-written gRPC service (no protoc): two unary
// methods whose messages are the Go structs Info, Request and Message
// encoded with encoding/gob (float64 values travel bit-exactly).
const (
	serviceName = "fairdp.steffle.Silo"
	methodInfo  = "/" + serviceName + "/Info"
	methodRound = "/" + serviceName + "/Round"
)

// gobCodec is the gRPC codec of the protocol.
type gobCodec struct{}

func (gobCodec) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(v)
	return buf.Bytes(), err
}
func (gobCodec) Unmarshal(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}
func (gobCodec) Name() string { return "gob" }

type empty struct{ Ok bool }

// siloService serves one silo; calls are serialised (a silo answers one
// round at a time). After is called after every answered round (the CLI
// saves the silo's state there).
type siloService[T nn.Float] struct {
	mu    sync.Mutex
	silo  *Silo[T]
	after func(*Silo[T]) error
}

type siloHandler interface {
	info() (Info, error)
	round(Request) (Message, error)
}

func (s *siloService[T]) info() (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.silo.Info()
}

func (s *siloService[T]) round(rq Request) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg, err := s.silo.Round(rq)
	if err == nil && s.after != nil {
		err = s.after(s.silo)
	}
	return msg, err
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*siloHandler)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Info", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in empty
			if err := dec(&in); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "%s: %v", ErrMalformed.Error(), err)
			}
			inf, err := srv.(siloHandler).info()
			if err != nil {
				return nil, status.Errorf(codes.Internal, "silo receipt: %v", err)
			}
			return inf, nil
		}},
		{MethodName: "Round", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var rq Request
			if err := dec(&rq); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "%s: %v", ErrMalformed.Error(), err)
			}
			msg, err := srv.(siloHandler).round(rq)
			switch {
			case errors.Is(err, accounting.ErrBudgetExceeded):
				return nil, status.Error(codes.ResourceExhausted, err.Error())
			case errors.Is(err, ErrMalformed):
				return nil, status.Error(codes.InvalidArgument, err.Error())
			case err != nil:
				return nil, status.Error(codes.Internal, err.Error())
			}
			return msg, nil
		}},
	},
}

// Serve runs silo on lis until ctx ends, with mutual TLS from tlsCfg (nil:
// no TLS, for tests only). after, if not nil, runs after every answered
// round, after the silo saved its state, before the answer is sent (tests
// inject faults there).
//
// A served silo's noisy sums are its messages and leave the process as they
// are, so Serve switches its noise to the floating-point-safe sampler
// (dpops.AddGaussianHardened). In-process federations keep the fast sampler:
// their messages never leave the process, and N = 1 stays bit-identical to
// central DP-FERMI.
func Serve[T nn.Float](ctx context.Context, lis net.Listener, silo *Silo[T], tlsCfg *tls.Config, after func(*Silo[T]) error) error {
	silo.alg.HardenedNoise = true
	opts := []grpc.ServerOption{grpc.ForceServerCodec(gobCodec{}), grpc.MaxRecvMsgSize(1 << 30), grpc.MaxSendMsgSize(1 << 30)}
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&serviceDesc, &siloService[T]{silo: silo, after: after})
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			srv.Stop()
		case <-done:
		}
	}()
	err := srv.Serve(lis)
	close(done)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// remote is a Client over gRPC.
type remote struct {
	addr string
	conn *grpc.ClientConn
}

// Dial connects to the silo at addr (mutual TLS with tlsCfg; nil: no TLS,
// for tests only). Connecting is lazy: an unreachable silo shows up as an
// Unavailable error of the first call, which the server retries.
func Dial(addr string, tlsCfg *tls.Config) (Client, func() error, error) {
	creds := grpc.WithTransportCredentials(insecureCreds())
	if tlsCfg != nil {
		creds = grpc.WithTransportCredentials(confirmedTLS{credentials.NewTLS(tlsCfg)})
	}
	conn, err := grpc.NewClient(addr, creds, grpc.WithDefaultCallOptions(grpc.ForceCodec(gobCodec{}),
		grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		return nil, nil, fmt.Errorf("silo %s: %w", addr, err)
	}
	return &remote{addr: addr, conn: conn}, conn.Close, nil
}

func (r *remote) Name() string { return r.addr }

func (r *remote) Info(ctx context.Context) (Info, error) {
	var info Info
	err := r.conn.Invoke(ctx, methodInfo, &empty{Ok: true}, &info)
	return info, r.wrap(err)
}

func (r *remote) Round(ctx context.Context, rq Request) (Message, error) {
	var msg Message
	err := r.conn.Invoke(ctx, methodRound, &rq, &msg)
	return msg, r.wrap(err)
}

// wrap turns gRPC status codes into the server's error kinds.
func (r *remote) wrap(err error) error {
	if err == nil {
		return nil
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		if err := tlsFailure(r.addr, st.Message()); err != nil {
			return err
		}
		return Unavailable{Err: errors.New(st.Message())}
	case codes.ResourceExhausted:
		return fmt.Errorf("%w%s", accounting.ErrBudgetExceeded, strings.TrimPrefix(st.Message(), accounting.ErrBudgetExceeded.Error()))
	case codes.InvalidArgument:
		return fmt.Errorf("%w%s", ErrMalformed, strings.TrimPrefix(st.Message(), ErrMalformed.Error()))
	}
	return errors.New(st.Message())
}

// confirmedTLS is the server's TLS as a gRPC client, made to learn whether
// the silo accepted the server's certificate. Under TLS 1.3 the client's
// handshake ends before the silo has checked the client's certificate; a
// silo that refuses it sends an alert and closes, and a client that writes
// first (gRPC's preface) usually sees only a broken pipe, which reads as
// an unreachable silo. A silo that accepts the certificate sends its
// HTTP/2 settings at once, so ClientHandshake waits for those first bytes
// (kept and returned by the connection's first Read) or the silo's alert.
type confirmedTLS struct {
	credentials.TransportCredentials
}

func (c confirmedTLS) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		return nil, nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	buf := make([]byte, 4096)
	n, err := 0, conn.SetReadDeadline(deadline)
	if err == nil {
		n, err = conn.Read(buf)
	}
	if err == nil {
		err = conn.SetReadDeadline(time.Time{})
	}
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("the silo closed the connection after the TLS handshake: %w", err)
	}
	return &prefixConn{Conn: conn, pending: buf[:n]}, info, nil
}

func (c confirmedTLS) Clone() credentials.TransportCredentials {
	return confirmedTLS{c.TransportCredentials.Clone()}
}

// prefixConn returns pending before what is still to be read from Conn.
type prefixConn struct {
	net.Conn
	pending []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pending) > 0 {
		n := copy(b, p.pending)
		p.pending = p.pending[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// ErrTLS marks a connection whose mutual-TLS handshake failed: a
// certificate of another federation, one that does not name the silo's
// address, an expired one, or a silo without TLS. Retrying cannot help, so
// the server stops at once and says which certificate failed and why,
// instead of calling the silo unreachable.
var ErrTLS = errors.New("federated: TLS handshake failed")

// tlsFailure reads a failed connection's gRPC message (the only place the
// handshake's error reaches the caller) and returns ErrTLS with which side
// refused which certificate and what to do, or nil when the failure is not
// a handshake failure. The server verifies the silo's certificate during
// its handshake ("authentication handshake failed" with the x509 reason);
// the silo verifies the server's certificate after the server's side of
// the handshake is done (TLS 1.3), so that refusal comes back as the
// silo's alert ("remote error: tls: …", which confirmedTLS waits for).
func tlsFailure(addr, msg string) error {
	const fix = "give the silo and the server the files of the same `fairdp silo certs` run (its --hosts naming the address the server dials)"
	switch {
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return fmt.Errorf("%w: silo %s does not speak TLS (was it started without certificates?) [%s]", ErrTLS, addr, msg)
	case strings.Contains(msg, "remote error: tls:"):
		return fmt.Errorf("%w: silo %s rejected the server's certificate (%s): the server's certificate (server.pem) was not signed by the CA "+
			"in the silo's certificate directory (ca.pem); %s", ErrTLS, addr, strings.TrimSuffix(msg[strings.Index(msg, "remote error: tls:"):], `"`), fix)
	case strings.Contains(msg, "x509:") || strings.Contains(msg, "authentication handshake failed"):
		why := "it did not verify against the CA in the server's certificate directory (ca.pem)"
		switch {
		case strings.Contains(msg, "unknown authority"):
			why = "it was signed by another CA than the one in the server's certificate directory (ca.pem)"
		case strings.Contains(msg, "certificate is valid for") || strings.Contains(msg, "doesn't contain any IP SANs"):
			why = fmt.Sprintf("it does not name the address the server dials (%s)", addr)
		case strings.Contains(msg, "expired or is not yet valid"):
			why = "it has expired or is not yet valid"
		}
		return fmt.Errorf("%w: the server refused silo %s's certificate (silo.pem): %s [%s]; %s", ErrTLS, addr, why, msg, fix)
	}
	return nil
}

// LoadTLS reads the mutual-TLS configuration GenerateCerts wrote in dir
// for role "silo" (a server certificate) or "server" (the federation
// server's client certificate): both sides require a certificate signed
// by the federation's CA.
func LoadTLS(dir, role string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, fmt.Errorf("certificate directory: %w (create the files with `fairdp silo certs --out %s`)", err, dir)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("certificate directory: %s holds no PEM certificate", filepath.Join(dir, "ca.pem"))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, role+".pem"), filepath.Join(dir, role+"-key.pem"))
	if err != nil {
		return nil, fmt.Errorf("certificate directory: %s certificate: %w", role, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	if role == "silo" {
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	} else {
		cfg.RootCAs = pool
	}
	return cfg, nil
}
