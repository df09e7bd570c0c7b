# kube.sh: small kubectl helpers for the scenarios. Pods report what they
# read through their termination message, so no scenario depends on exec or
# log streaming through the kubelet.

k() { "$KUBECTL" "$@"; }

# apply: kubectl apply of the YAML on stdin.
apply() { k apply -f - >/dev/null; }

# storage_class NAME [PARAMS] [expand]: apply a chainvol StorageClass NAME
# whose volumes are made where their first consumer is scheduled
# (WaitForFirstConsumer), with PARAMS as its parameters (a YAML flow map,
# written as it is: none when empty) and, with "expand", volume expansion
# allowed.
storage_class() {
  {
    printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s}\n' "$1"
    printf 'provisioner: chainvol.csi.io\nvolumeBindingMode: WaitForFirstConsumer\n'
    if [[ ${3:-} == expand ]]; then echo 'allowVolumeExpansion: true'; fi
    if [[ -n ${2:-} ]]; then echo "parameters: $2"; fi
  } | apply
}

# backup_class NAME POLICY [PARAMS]: apply a chainvol VolumeSnapshotClass
# NAME of backups (backup: "true", then PARAMS: more YAML flow map
# entries) with the deletion policy POLICY (Retain, Delete).
backup_class() {
  apply <<Y
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: $1}
driver: chainvol.csi.io
deletionPolicy: $2
parameters: {backup: "true"${3:+, $3}}
Y
}

# until_true WHAT SECONDS CMD...: like wait_for, but fails the scenario
# (returns 1) instead of the run.
until_true() {
  local what=$1 secs=$2; shift 2
  local t0=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS - t0 >= secs )); then log "timed out after ${secs}s: $what"; return 1; fi
    sleep 1
  done
}

# jp NS KIND/NAME JSONPATH: one field of an object.
jp() { k -n "$1" get "$2" -o "jsonpath=$3" 2>/dev/null; }

# pvc NS NAME CLASS SIZE [DATASOURCE_SNAPSHOT [BACKUPSOURCE]]: a claim,
# from a VolumeSnapshot or (issue 26's populator) a BackupSource.
pvc() {
  local src=""
  [[ -n ${5:-} ]] && src="  dataSource: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: $5}"
  [[ -n ${6:-} ]] && src="  dataSourceRef: {apiGroup: chainvol.csi.io, kind: BackupSource, name: $6}"
  apply <<Y
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $2, namespace: $1}
spec:
  storageClassName: $3
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: $4}}
$src
Y
}

# pod NS NAME CLAIM SCRIPT: a one-shot pod running SCRIPT with the claim at
# /data; SCRIPT's last words go to the termination message. With POD_NODE
# set, the pod runs on that node (and tolerates its taints: the second
# node of CLUSTER_NODES=2 takes only such pods).
pod() {
  local placement=""
  [[ -n ${POD_NODE:-} ]] && placement="  nodeSelector: {kubernetes.io/hostname: $POD_NODE}
  tolerations: [{operator: Exists}]"
  apply <<Y
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1}
spec:
$placement
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
    - name: c
      image: $TOOLS_IMAGE
      imagePullPolicy: Never
      command: ["/bin/sh", "-ec", $(printf '%s' "$4" | jq -Rs .)]
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      persistentVolumeClaim: {claimName: $3}
Y
}

# finished NS POD: the pod ran to completion (true) or failed (error).
finished() {
  local ph; ph=$(jp "$1" "pod/$2" '{.status.phase}')
  [[ $ph == Failed ]] && { log "pod $1/$2 failed: $(message "$1" "$2")"; return 2; }
  [[ $ph == Succeeded ]]
}

# run_pod NS NAME CLAIM SCRIPT [SECONDS]: run a one-shot pod to completion,
# print its termination message, delete it.
run_pod() {
  pod "$1" "$2" "$3" "$4"
  local t0=$SECONDS rc
  while :; do
    finished "$1" "$2"; rc=$?
    (( rc == 0 )) && break
    (( rc == 2 )) && return 1
    (( SECONDS - t0 < ${5:-300} )) || { log "pod $1/$2 did not finish"; return 1; }
    sleep 1
  done
  message "$1" "$2"
  k -n "$1" delete pod "$2" --wait=true >/dev/null
}

message() { jp "$1" "pod/$2" '{.status.containerStatuses[0].state.terminated.message}'; }

# events NS KIND NAME: the messages of the events about one object.
events() {
  k -n "$1" get events --field-selector "involvedObject.kind=$2,involvedObject.name=$3" \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'
}

# snapshot NS NAME CLAIM [CLASS]: a backup VolumeSnapshot (of CLASS,
# default e2e-backup); waits until ReadyToUse and prints its content's
# snapshot handle.
snapshot() {
  apply <<Y
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: $2, namespace: $1}
spec:
  volumeSnapshotClassName: ${4:-e2e-backup}
  source: {persistentVolumeClaimName: $3}
Y
  until_true "snapshot $1/$2 ready" 300 sh -c "[ \"\$('$KUBECTL' -n $1 get volumesnapshot $2 -o jsonpath='{.status.readyToUse}')\" = true ]" || return 1
  local content; content=$(jp "$1" "volumesnapshot/$2" '{.status.boundVolumeSnapshotContentName}')
  k get volumesnapshotcontent "$content" -o 'jsonpath={.status.snapshotHandle}'
}

# statefulset NS NAME CLASS COMMAND [ENV] [DATASOURCE]: applies the
# 3-replica Parallel StatefulSet NAME (pods labelled app=NAME, claims
# data-NAME-N of CLASS, 1Gi, mounted at /data) whose one container runs
# COMMAND (a JSON string, for /bin/sh -ec) with ENV (a YAML list, default
# none) and is ready once /tmp/ready exists; DATASOURCE (YAML flow map)
# fills each claim through a volume populator. Waits for the rollout.
statefulset() {
  apply <<Y
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: $2, namespace: $1}
spec:
  serviceName: $2
  replicas: 3
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: c
          image: $TOOLS_IMAGE
          imagePullPolicy: Never
          env: ${5:-[]}
          command: ["/bin/sh", "-ec", $4]
          readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 1}
          volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        storageClassName: $3
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
        ${6:+dataSourceRef: $6}
Y
  k -n "$1" rollout status "statefulset/$2" --timeout=300s >/dev/null || {
    log "StatefulSet $1/$2 not rolled out: $(k -n "$1" get pvc,pods -o wide 2>&1)"; return 1; }
}
