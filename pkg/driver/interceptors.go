package driver

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

var requestSeq atomic.Uint64

// logInterceptor counts every call in the gRPC metrics (outermost, so they
// see the final code) and logs it (logCall).
func (d *Driver) logInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	return d.metrics.grpc.UnaryServerInterceptor()(ctx, req, info, func(ctx context.Context, req any) (any, error) {
		return logCall(ctx, req, info, handler)
	})
}

// logCall logs a call with a request id, its sanitized request
// (protosanitizer strips csi_secret fields) and its code and duration, and
// turns stray non-status errors into Internal.
func logCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	id := requestSeq.Add(1)
	start := time.Now()
	klog.V(4).InfoS("call", "id", id, "method", info.FullMethod, "request", protosanitizer.StripSecrets(req))
	resp, err := handler(ctx, req)
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			err = status.Error(codes.Internal, err.Error())
		}
	}
	if err != nil {
		klog.ErrorS(err, "call failed", "id", id, "method", info.FullMethod, "code", status.Code(err), "duration", time.Since(start))
	} else {
		klog.V(4).InfoS("call done", "id", id, "method", info.FullMethod, "duration", time.Since(start), "response", protosanitizer.StripSecrets(resp))
	}
	return resp, err
}

// recoverInterceptor turns a panic in a handler into Internal instead of
// killing the node plugin (and with it every mount's owner).
func recoverInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			klog.ErrorS(nil, "panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
		}
	}()
	return handler(ctx, req)
}
