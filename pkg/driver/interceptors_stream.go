package driver

import (
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// streamInterceptor is the streaming calls' logCall and
// recoverInterceptor (the SnapshotMetadata service's are the only ones):
// a request id and the outcome logged, a stray non-status error Internal,
// a panic Internal instead of the end of the node plugin. The request is
// not logged: it is read by the handler, and it may carry secrets.
func streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	id := requestSeq.Add(1)
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			klog.ErrorS(nil, "panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
		}
		if err != nil {
			klog.ErrorS(err, "call failed", "id", id, "method", info.FullMethod, "code", status.Code(err), "duration", time.Since(start))
		} else {
			klog.V(4).InfoS("call done", "id", id, "method", info.FullMethod, "duration", time.Since(start))
		}
	}()
	klog.V(4).InfoS("call", "id", id, "method", info.FullMethod)
	err = handler(srv, ss)
	if _, ok := status.FromError(err); err != nil && !ok {
		err = status.Error(codes.Internal, err.Error())
	}
	return err
}
