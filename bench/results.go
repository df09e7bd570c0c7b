package main

// Results is everything one run measured; it is written as
// bench/results/latest.json. Every number is a Figure with its unit.
type Results struct {
	Schema     int     `json:"schema"`
	StartedAt  string  `json:"startedAt"`
	FinishedAt string  `json:"finishedAt"`
	Elapsed    Figure  `json:"elapsed"`
	Machine    Machine `json:"machine"`
	Config     Config  `json:"config"`

	Workload    Workload          `json:"workload"`
	Full        BackupPair        `json:"fullBackup"`
	Incremental []IncrementalPair `json:"incrementalBackups"`
	// StoredAfterChain is each bucket's size after the full backup and the
	// incrementals (before the extra links of the chain-length test).
	StoredAfterChain map[string]Figure `json:"storedAfterChain"`
	Restores         []RestoreSet      `json:"restores"`
	LocalBase        *LocalBase        `json:"localBaseRestore,omitempty"`
	Scale            *Scale            `json:"scale,omitempty"`
	ChainLength      []ChainLink       `json:"chainLength"`
	FlatBackup       *FlatBackup       `json:"chainvolctlFullBackup,omitempty"`
	SnapClone        []SnapClone       `json:"snapshotClone"`
	Instant          []InstantSet      `json:"instantRestore,omitempty"`
	// Lines are the rows of the printed table, with ratios and targets.
	Lines []Line `json:"lines"`
}

// Machine is where the run happened and how busy it was.
type Machine struct {
	CPU         string `json:"cpu"`
	Cores       int    `json:"cores"`
	MemoryBytes Figure `json:"memory"`
	Kernel      string `json:"kernel"`
	LoadBefore  string `json:"loadBefore"`
	LoadAfter   string `json:"loadAfter"`
	// Quiet: every load average before the run was at most quietLoad.
	Quiet  bool   `json:"quiet"`
	Restic string `json:"restic"`
	Go     string `json:"go"`
	Disk   string `json:"disk"`
}

// Config are the flags of the run.
type Config struct {
	VolumeSize     Figure   `json:"volumeSize"`
	FillFraction   float64  `json:"fillFraction"`
	Rounds         int      `json:"rounds"`
	ChangeFraction float64  `json:"changeFraction"`
	LongChain      int      `json:"longChainLinks"`
	Runs           int      `json:"runs"`
	ResticRuns     int      `json:"resticRestoreRuns"`
	SnapSizes      []Figure `json:"snapshotSizes"`
	SnapFill       float64  `json:"snapshotFillFraction"`
	SnapRuns       int      `json:"snapshotRuns"`
	ScaleData      Figure   `json:"scaleData"`
	BlockSize      string   `json:"blockSize,omitempty"`
	InstantSizes   []Figure `json:"instantSizes,omitempty"`
	InstantData    Figure   `json:"instantData"`
	// Only are the phases run (-only); empty: every phase.
	Only []string `json:"only,omitempty"`
	Seed uint64   `json:"seed"`
}

// Workload is what was written to the volume.
type Workload struct {
	Fill   fillStats     `json:"fill"`
	Rounds []changeStats `json:"rounds"`
}

// BackupRun is one backup by one tool.
type BackupRun struct {
	Time       Figure `json:"time"`
	Throughput Figure `json:"throughput"` // the image's allocated bytes per second
	Uploaded   Figure `json:"uploaded"`   // growth of the tool's bucket
	PeakRSS    Figure `json:"peakRSS"`
	// CPU is user+system time: of the driver process over the call for
	// chainvol, of the restic process for restic.
	CPU Figure `json:"cpu"`
	// Engine is chainvol's upload alone, from the driver's log: Time less
	// the reflink snapshot (with its freeze) and the CSI calls.
	Engine Figure `json:"engineTime,omitempty"`
	ID     string `json:"id"`
}

// BackupPair is the full backup by both tools.
type BackupPair struct {
	ImageAllocated Figure    `json:"imageAllocated"`
	Chainvol       BackupRun `json:"chainvol"`
	Restic         BackupRun `json:"restic"`
	// NullBackup is the full backup's limit (s3.nullBackup): the snapshot's
	// data blocks read and PUT as they are, the engine's concurrency.
	NullBackup Figure `json:"nullBackup"`
}

// IncrementalPair is one round of changes and both tools' backups of it.
type IncrementalPair struct {
	Round        int       `json:"round"`
	ChangedBytes Figure    `json:"changedBytes"`
	Chainvol     BackupRun `json:"chainvol"`
	Restic       BackupRun `json:"restic"`
	// ChainvolVsFull is the incremental's time over chainvol's full backup's.
	ChainvolVsFull Figure `json:"chainvolVsFull"`
}

// RestoreSet is one backup restored every way, beside the limit.
type RestoreSet struct {
	Name        string `json:"name"` // "newest" or "base"
	BackupID    string `json:"backupId"`
	Links       int    `json:"links"`
	DataBytes   Figure `json:"dataBytes"`
	ObjectBytes Figure `json:"objectBytes"`
	CSI         Figure `json:"chainvolCreateVolume"`
	CSIPeakRSS  Figure `json:"chainvolCreateVolumePeakRSS"` // the driver's VmHWM
	CSICPU      Figure `json:"chainvolCreateVolumeCPU"`     // the driver's user+system time, median
	Ctl         Figure `json:"chainvolctlRestore"`
	CtlPeakRSS  Figure `json:"chainvolctlRestorePeakRSS"`
	CtlCPU      Figure `json:"chainvolctlRestoreCPU"`
	Restic      Figure `json:"resticRestore"`
	ResticRSS   Figure `json:"resticRestorePeakRSS"`
	ResticCPU   Figure `json:"resticRestoreCPU"`
	// CtlServerCPU and ResticServerCPU are the S3 server's (versitygw's)
	// user+system time during chainvolctl's and restic's restores, median.
	CtlServerCPU Figure `json:"s3ServerCPUDuringChainvolctlRestore"`
	// CtlMachineCPU is the whole machine's busy CPU time (all cores, kernel
	// threads such as the loop device's included, /proc/stat) during
	// chainvolctl's restore, median.
	CtlMachineCPU   Figure `json:"machineCPUDuringChainvolctlRestore"`
	ResticServerCPU Figure `json:"s3ServerCPUDuringResticRestore"`
	Get             Figure `json:"limitGet"`
	// Write is the faster per run of WriteBuffered and WriteDirect.
	Write         Figure `json:"limitWrite"`
	WriteBuffered Figure `json:"limitWriteBuffered"`
	WriteDirect   Figure `json:"limitWriteDirect"`
	// GetOrWrite is per run max(get, write), median: schema 2's limit,
	// as if GET and write each had the machine to themselves.
	GetOrWrite Figure `json:"limitGetOrWrite"`
	// Limit is the null restore (nullRestore), median: the same GETs and
	// O_DIRECT writes at once, without digests or decoding.
	Limit Figure `json:"limit"`
}

// LocalBase is CreateVolume of one backup on the node that holds the local
// snapshot of another backup of the chain (Distance backups apart), beside
// the limit of a full restore of the same backup.
type LocalBase struct {
	BackupID     string `json:"backupId"`
	BaseBackupID string `json:"baseBackupId"`
	Distance     int    `json:"distance"`
	// DiffBytes is the size of the blocks whose digest differs between the two images.
	DiffBytes Figure `json:"diffBytes"`
	CSI       Figure `json:"chainvolCreateVolume"`
	// Engine is the restore engine's own time, from the driver's log.
	Engine    Figure `json:"engineTime"`
	FullLimit Figure `json:"fullRestoreLimit"`
	// ImageBytes is the restored image's data bytes; FullRestore the
	// median CreateVolume of the same backup on node b (a full restore).
	ImageBytes  Figure `json:"imageBytes"`
	FullRestore Figure `json:"fullRestoreCreateVolume"`
	// Same is CreateVolume of the backup whose snapshot the node holds.
	Same Figure `json:"sameBackupCreateVolume"`
}

// Scale is the restore (chainvolctl) of the same data in a volume of its
// size and in one 64 times larger.
type Scale struct {
	Data  Figure `json:"data"`
	Small Figure `json:"smallVolumeRestore"`
	Large Figure `json:"largeVolumeRestore"`
	Ratio Figure `json:"ratio"`
}

// ChainLink is the restore of the newest backup of a chain of Links links.
type ChainLink struct {
	// Chain is bench/data, or bench/flat: a full backup of the long
	// chain's newest image, so the same bytes in one link.
	Chain     string `json:"chain"`
	Links     int    `json:"links"`
	BackupID  string `json:"backupId"`
	DataBytes Figure `json:"dataBytes"`
	Ctl       Figure `json:"chainvolctlRestore"`
	Limit     Figure `json:"limit"` // the null restore, median
}

// FlatBackup is the full backup of the long chain's newest image by
// chainvolctl backup create: the backup engine as a child process, so its
// own peak RSS and CPU.
type FlatBackup struct {
	Time    Figure `json:"time"`
	CPU     Figure `json:"cpu"`
	PeakRSS Figure `json:"peakRSS"`
}

// SnapClone is the snapshot and clone times of one volume size.
type SnapClone struct {
	Size     Figure `json:"size"`
	Written  Figure `json:"written"`
	Extents  int    `json:"extents"`
	Snapshot Figure `json:"snapshot"`
	Clone    Figure `json:"clone"`
	// CpReflink is `cp --reflink=always` of the same data file: the limit.
	CpReflink Figure `json:"cpReflink"`
	DeleteAll Figure `json:"deleteSnapshotAndClone"`
}

// InstantSet is one backup restored with restoreMode "instant" on node b
// (issue 27), beside a full restore of the same backup in the same run;
// times are medians of -runs.
type InstantSet struct {
	Size      Figure `json:"size"` // of the source volume, so of the backup
	BackupID  string `json:"backupId"`
	DataBytes Figure `json:"dataBytes"` // the image's non-zero blocks
	Objects   int    `json:"objects"`   // its distinct block objects
	// Span is the end of the last data block over the image's size.
	Span Figure `json:"dataSpan"`
	// Published runs from CreateVolume to NodePublishVolume's answer: the
	// sum of Create, Stage and Publish (the three calls).
	Published Figure `json:"createToPublished"`
	Create    Figure `json:"createVolume"`
	Stage     Figure `json:"nodeStageVolume"`
	Publish   Figure `json:"nodePublishVolume"`
	// Read1MiB is the read of a 1 MiB file right after publish; BlockGet
	// one GET of one block object, read whole (3 a run).
	Read1MiB Figure `json:"read1MiB"`
	BlockGet Figure `json:"blockGet"`
	// Read1MiBHydrated is the same file read with O_DIRECT once
	// hydrated, the FUSE file's cache dropped: the read path without a fetch.
	Read1MiBHydrated Figure `json:"read1MiBHydrated"`
	// Hydration runs from CreateVolume until the volume health has no
	// "Hydrating" entry; FullRestore is CreateVolume with restoreMode full.
	Hydration   Figure `json:"hydration"`
	FullRestore Figure `json:"fullRestoreCreateVolume"`
	// HydrationEngine and FullEngine are the driver's own durations, from
	// its log: "restore started" to "hydration done", and the full
	// restore's "restore done" duration.
	HydrationEngine Figure `json:"hydrationFromDriverLog"`
	FullEngine      Figure `json:"fullRestoreFromDriverLog"`
	// HydrationCPU and FullCPU are the driver's user+system time over
	// each (the hydration's includes serving the FUSE file to the mount
	// and the 1 MiB read).
	HydrationCPU Figure `json:"hydrationDriverCPU"`
	FullCPU      Figure `json:"fullRestoreDriverCPU"`
	// Unstaged is an instant restore never staged, CreateVolume until
	// hydrated, and the driver's CPU time over it: hydration alone.
	Unstaged    Figure `json:"hydrationUnstaged"`
	UnstagedCPU Figure `json:"hydrationUnstagedDriverCPU"`
	// StageFetches and Fetches are the blocks the driver fetched by the
	// end of NodeStageVolume and in all (chainvol_hydration_fetch_seconds,
	// on-demand and hydration alike); FetchMean their mean latency (GET,
	// decode, digest check, write).
	StageFetches Figure `json:"fetchesByStaged"`
	Fetches      Figure `json:"fetches"`
	FetchMean    Figure `json:"fetchMeanLatency"`
	// LoopRead and LoopWritten are the bytes the loop device over the
	// FUSE file read and wrote from its attach (NodeStageVolume) until
	// hydrated: the mount's, the 1 MiB read's, and what ext4 did by itself
	// (the bench writes nothing).
	LoopRead    Figure `json:"loopReadWhileHydrating"`
	LoopWritten Figure `json:"loopWrittenWhileHydrating"`
	DB          DBLoad `json:"randomReads"`
}

// DBLoad is random 4 KiB O_DIRECT reads of one file, one at a time, on a
// fresh instant restore from its publish until hydration ended (or 3 s),
// then for 3 s on the hydrated volume (still over FUSE).
type DBLoad struct {
	Reads         int    `json:"reads"`
	Seconds       Figure `json:"seconds"`
	P50           Figure `json:"p50"`
	P99           Figure `json:"p99"`
	Max           Figure `json:"max"`
	Slow          int    `json:"slowerThan1ms"` // reads that waited for a fetch, most likely
	HydratedAtEnd Figure `json:"hydratedAtEnd"` // fraction of the bytes, when the reads ended
	AfterP50      Figure `json:"hydratedP50"`
	AfterP99      Figure `json:"hydratedP99"`
}

// Line is one row of the table: the chainvol figure, what it is compared
// with, the ratios and the team's target.
type Line struct {
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	Chainvol float64  `json:"chainvol"`
	Restic   *float64 `json:"restic,omitempty"`
	Limit    *float64 `json:"limit,omitempty"`
	VsRestic *float64 `json:"chainvolOverRestic,omitempty"`
	VsLimit  *float64 `json:"chainvolOverLimit,omitempty"`
	Target   string   `json:"target,omitempty"`
	Met      *bool    `json:"met,omitempty"`
}
