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

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"fairdp/nn"
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
				return nil, status.Errorf(codes.InvalidArgument, "malformed request: %v", err)
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
				return nil, status.Errorf(codes.InvalidArgument, "malformed request: %v", err)
			}
			msg, err := srv.(siloHandler).round(rq)
			switch {
			case errors.Is(err, ErrBudget):
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
		creds = grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg))
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
		return Unavailable{Err: errors.New(st.Message())}
	case codes.ResourceExhausted:
		return fmt.Errorf("%w%s", ErrBudget, strings.TrimPrefix(st.Message(), ErrBudget.Error()))
	case codes.InvalidArgument:
		return fmt.Errorf("%w%s", ErrMalformed, strings.TrimPrefix(st.Message(), ErrMalformed.Error()))
	}
	return errors.New(st.Message())
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
