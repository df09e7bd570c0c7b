package driver

import (
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/retention"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// Retention policy parameters of a backup VolumeSnapshotClass (or
// VolumeGroupSnapshotClass): pkg/retention's rules, restic's forget
// semantics. Counts are integers >= 0, or -1 for every bucket; keepWithin
// is a period such as 48h or 7d (store.ParseRetainPeriod).
const (
	ParamKeepLast    = "keepLast"
	ParamKeepHourly  = "keepHourly"
	ParamKeepDaily   = "keepDaily"
	ParamKeepWeekly  = "keepWeekly"
	ParamKeepMonthly = "keepMonthly"
	ParamKeepYearly  = "keepYearly"
	ParamKeepWithin  = "keepWithin"
)

// retentionParams are the retention parameters in documentation order.
var retentionParams = []string{ParamKeepLast, ParamKeepHourly, ParamKeepDaily, ParamKeepWeekly, ParamKeepMonthly, ParamKeepYearly, ParamKeepWithin}

// retentionCount points at p's count that parameter key sets; nil for
// keepWithin and other keys.
func retentionCount(p *retention.Policy, key string) *int {
	return map[string]*int{ParamKeepLast: &p.Last, ParamKeepHourly: &p.Hourly, ParamKeepDaily: &p.Daily,
		ParamKeepWeekly: &p.Weekly, ParamKeepMonthly: &p.Monthly, ParamKeepYearly: &p.Yearly}[key]
}

// parseRetentionParam sets the rule of retention parameter key (one of
// retentionParams) in p. Errors: InvalidArgument naming the parameter.
func parseRetentionParam(p *retention.Policy, key, v string) error {
	if key == ParamKeepWithin {
		d, err := store.ParseRetainPeriod(v)
		if err != nil {
			return status.Errorf(codes.InvalidArgument, "parameter %s %q: want a positive period such as 48h or 7d", key, v)
		}
		p.Within = d
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < retention.Unlimited {
		return status.Errorf(codes.InvalidArgument, "parameter %s %q: want a count >= 0, or -1 for unlimited", key, v)
	}
	*retentionCount(p, key) = n
	return nil
}
