# pki.sh: a throwaway PKI for one run: a CA, the apiserver's serving
# certificate, client certificates for the admin, the node and the apiserver
# talking to the kubelet, the service-account signing key, and kubeconfigs.
# Made fresh each run under $RUN/pki and deleted at teardown.

# cert NAME SUBJECT [SANS]: a key and a CA-signed certificate valid 2 days.
cert() {
  local n=$1 subj=$2 sans=${3:-}
  openssl req -new -newkey rsa:2048 -nodes -keyout "$P/$n.key" -subj "$subj" -out "$P/$n.csr" 2>/dev/null
  local ext="basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth"
  [[ -n $sans ]] && ext+="
subjectAltName=$sans"
  openssl x509 -req -in "$P/$n.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
    -extfile <(echo "$ext") -out "$P/$n.crt" 2>/dev/null
  rm "$P/$n.csr"
}

# kubeconfig NAME: a kubeconfig for the client certificate NAME.
kubeconfig() {
  cat > "$P/$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "https://$NODE_IP:6443", certificate-authority: "$P/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$P/$1.crt", client-key: "$P/$1.key"}
contexts:
- name: e2e
  context: {cluster: e2e, user: $1}
current-context: e2e
KC
}

make_pki() {
  P=$RUN/pki
  mkdir -p "$P"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.crt" -days 2 \
    -subj "/CN=chainvol-e2e-ca" 2>/dev/null
  cert apiserver "/CN=kube-apiserver" \
    "IP:$NODE_IP,IP:10.96.0.1,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin "/O=system:masters/CN=e2e-admin"
  cert node "/O=system:nodes/CN=system:node:$NODE_NAME"
  cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert kubelet "/CN=$NODE_NAME" "IP:$NODE_IP,DNS:$NODE_NAME"
  openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
  openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
  kubeconfig admin
  kubeconfig node
  if two_nodes; then
    cert node-b "/O=system:nodes/CN=system:node:$NODE_B_NAME"
    cert kubelet-b "/CN=$NODE_B_NAME" "IP:$NODE_B_IP,DNS:$NODE_B_NAME"
    kubeconfig node-b
  fi
}
