#!/usr/bin/env bash
# shellcheck disable=SC2317 # the probes wait_for calls look unreachable to it
# hack/testbed.sh: a real Kubernetes control plane for Ebb's integration tests.
#
#   hack/testbed.sh build          build the binaries into the cache (idempotent)
#   hack/testbed.sh up             start the testbed; prints the kubeconfig path
#   hack/testbed.sh up --real-node a real node (containerd, runc, CNI, kubelet, kube-proxy) instead of kwok's
#   hack/testbed.sh run -- CMD...  run CMD inside the testbed's network namespace
#   hack/testbed.sh down           stop everything and delete the run dir (idempotent)
#   hack/testbed.sh status | logs [COMPONENT] | env
#
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and
# metrics-server run in a private network namespace that has only `lo`; 10.244.0.0/16 is routed
# locally there, and kwok gives pods addresses from 10.244.0.0/24, so a pod IP
# is a real address a test can bind and dial, and nothing leaves the
# namespace. docs/testbed.md says more.
set -euo pipefail

# The versions known to build and work together (docs/testbed.md).
K8S_VERSION=${EBB_TESTBED_K8S_VERSION:-v1.37.1}
ETCD_VERSION=${EBB_TESTBED_ETCD_VERSION:-v3.7.3}
KWOK_VERSION=${EBB_TESTBED_KWOK_VERSION:-v0.8.0}
METRICS_SERVER_VERSION=${EBB_TESTBED_METRICS_SERVER_VERSION:-v0.9.0}
# The staging modules (k8s.io/api, ...) are released as v0.MINOR.PATCH.
STAGING_VERSION=v0.${K8S_VERSION#v1.}

CACHE_ROOT=${EBB_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ebb-testbed}
CACHE_DIR=$CACHE_ROOT/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}
BIN_DIR=$CACHE_DIR/bin
STAGE_DIR=$CACHE_DIR/stage
RUN_DIR=${EBB_TESTBED_RUN_DIR:-${TMPDIR:-/tmp}/ebb-testbed}
NETNS=${EBB_TESTBED_NETNS:-ebb-testbed}

POD_ROUTE=10.244.0.0/16 # routed to lo inside the namespace
POD_CIDR=10.244.0.0/24  # kwok's pool: pods get 10.244.0.1, .2, ...
NODE_IP=10.244.255.1    # every fake node's InternalIP (the pods' hostIP)
METRICS_SERVER_IP=10.244.254.1 # metrics-server listens here, :4443
# The real node (up --real-node, or EBB_TESTBED_REAL_NODE=1): its address on
# a veth inside the namespace (the API server advertises it too, so pods
# reach it through the `kubernetes` Service), and the CNI bridge's pod range,
# both outside 10.244.0.0/16 (routed to lo).
REAL_NODE_NAME=ebb-real-0
REAL_NODE_IP=10.86.0.1
REAL_POD_CIDR=10.85.0.0/24
REAL=${EBB_TESTBED_REAL_NODE:-} # non-empty: the real node
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1 # the `kubernetes` Service
APISERVER=https://127.0.0.1:6443
NODES=(ebb-node-0 ebb-node-1 ebb-node-2)

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

K8S_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)

log() { printf 'testbed: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

usage() {
	sed -n 's/^#   \(hack\/testbed.sh\)/\1/p' "$0" >&2
	exit 2
}

# ---- build -----------------------------------------------------------------

# build_env sets what every build uses: modules resolved from the throwaway
# go.mod, static binaries, no paths or symbols baked in.
build_env() {
	command -v go >/dev/null || die "go is not on PATH"
	export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off
	unset GOOS GOARCH
}

# staging_replaces prints one replace line per staging module that
# k8s.io/kubernetes's own go.mod points at ./staging/..., pinned to its release.
staging_replaces() {
	local gomod
	gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
	[[ -f $gomod ]] || die "go mod download k8s.io/kubernetes@$K8S_VERSION gave no go.mod"
	awk -v v="$STAGING_VERSION" '
		$2 == "=>" && $3 ~ /^\.\/staging\// { printf "\t%s => %s %s\n", $1, $1, v; n++ }
		END { if (n == 0) exit 1 }' "$gomod" ||
		die "no ./staging replace directives in $gomod"
}

# throwaway_module DIR REQUIRE [REPLACES] writes a go.mod that requires one
# module, so its main packages build with their own replaces swapped for
# released versions.
throwaway_module() {
	mkdir -p "$1"
	{
		printf 'module ebb.dev/testbed-build\n\ngo 1.26.0\n\nrequire %s\n' "$2"
		if [[ -n ${3:-} ]]; then printf '\nreplace (\n%s\n)\n' "$3"; fi
	} >"$1/go.mod"
}

have_bins() {
	local b
	for b in "$@"; do [[ -x $BIN_DIR/$b ]] || return 1; done
}

# go_build DIR LDFLAGS PKG... builds into DIR/out.
go_build() {
	local dir=$1 ldflags=$2
	shift 2
	(cd "$dir" && go build -trimpath -ldflags="-s -w $ldflags" -o "$dir/out/" "$@") ||
		die "go build $* failed (module in $dir)"
}

# install_bins DIR moves DIR/out/* into the cache, one rename each, so a
# reader never sees half a binary.
install_bins() {
	local f
	for f in "$1"/out/*; do mv -f "$f" "$BIN_DIR/"; done
}

build_kubernetes() {
	have_bins "${K8S_BINS[@]}" && return
	log "building ${K8S_BINS[*]} $K8S_VERSION (cold: 8-15 minutes on 2 cores)"
	local dir=$1/kubernetes v=k8s.io/component-base/version minor=${K8S_VERSION#v1.}
	throwaway_module "$dir" "k8s.io/kubernetes $K8S_VERSION" "$(staging_replaces)"
	go_build "$dir" "-X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=${minor%%.*} -X $v.gitTreeState=clean" \
		"${K8S_BINS[@]/#/k8s.io/kubernetes/cmd/}"
	install_bins "$dir"
}

build_etcd() {
	have_bins etcd && return
	log "building etcd $ETCD_VERSION"
	# The etcd binary's main package is the root of the server module; go
	# names its binary "server" (the element before /v3).
	throwaway_module "$1/etcd" "go.etcd.io/etcd/server/v3 $ETCD_VERSION"
	go_build "$1/etcd" "" go.etcd.io/etcd/server/v3
	mv "$1/etcd/out/server" "$1/etcd/out/etcd"
	install_bins "$1/etcd"
}

build_kwok() {
	have_bins kwok && return
	log "building kwok $KWOK_VERSION"
	throwaway_module "$1/kwok" "sigs.k8s.io/kwok $KWOK_VERSION"
	go_build "$1/kwok" "" sigs.k8s.io/kwok/cmd/kwok
	install_bins "$1/kwok"
}

# build_metrics_server builds sigs.k8s.io/metrics-server with the versions
# of its own go.mod (it has no replaces); the binary's name carries the
# version, so a new version builds beside the old one.
build_metrics_server() {
	have_bins "metrics-server-$METRICS_SERVER_VERSION" && return
	log "building metrics-server $METRICS_SERVER_VERSION (cold: about 5 minutes on 2 cores)"
	throwaway_module "$1/metrics-server" "sigs.k8s.io/metrics-server $METRICS_SERVER_VERSION"
	go_build "$1/metrics-server" "" sigs.k8s.io/metrics-server/cmd/metrics-server
	mv "$1/metrics-server/out/metrics-server" "$1/metrics-server/out/metrics-server-$METRICS_SERVER_VERSION"
	install_bins "$1/metrics-server"
}

# copy_stages copies kwok's Stage YAMLs from its module into the cache.
copy_stages() {
	[[ -s $STAGE_DIR/fast/kustomization.yaml ]] && return
	local src
	src=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')/kustomize/stage
	[[ -s $src/fast/kustomization.yaml ]] || die "kwok module has no kustomize/stage/fast ($src)"
	rm -rf "$STAGE_DIR.tmp" && mkdir -p "$STAGE_DIR.tmp"
	cp -R "$src/." "$STAGE_DIR.tmp/" && chmod -R u+w "$STAGE_DIR.tmp"
	find "$STAGE_DIR.tmp" -type f ! -name '*.yaml' -delete
	rm -rf "$STAGE_DIR" && mv "$STAGE_DIR.tmp" "$STAGE_DIR"
}

# kustomize_files DIR prints the YAML files a kustomization's `resources`
# name, following directories (all kwok's stage kustomizations use).
kustomize_files() {
	local r
	awk '/^resources:/ { on = 1; next } /^[^ -]/ { on = 0 } on && /^- / { print $2 }' "$1/kustomization.yaml" |
		while read -r r; do
			if [[ -d $1/$r ]]; then kustomize_files "$1/$r"; else printf '%s\n' "$1/$r"; fi
		done
}

cmd_build() {
	build_env
	mkdir -p "$BIN_DIR"
	# A subshell holds the lock (two builds at once would each build
	# everything) and the temp dir, and the components `up` starts later
	# inherit neither.
	(
		flock 9
		if have_bins "${K8S_BINS[@]}" etcd kwok "metrics-server-$METRICS_SERVER_VERSION" && [[ -s $STAGE_DIR/fast/kustomization.yaml ]]; then
			log "binaries cached in $BIN_DIR"
			exit 0
		fi
		start=$SECONDS
		work=$(mktemp -d "${TMPDIR:-/tmp}/ebb-testbed-build.XXXXXX")
		trap 'rm -rf "$work"' EXIT
		build_etcd "$work"
		build_kwok "$work"
		copy_stages
		build_metrics_server "$work"
		build_kubernetes "$work"
		log "built into $BIN_DIR in $((SECONDS - start))s"
	) 9>"$CACHE_DIR/.build.lock"
}

# ---- up --------------------------------------------------------------------

ensure_root() { [[ $(id -u) == 0 ]] || die "$1 needs root (network namespaces); run it with sudo"; }

# ensure_tools installs what up needs from Debian when it is missing.
ensure_tools() {
	local missing=()
	command -v openssl >/dev/null || missing+=(openssl)
	command -v ip >/dev/null || missing+=(iproute2)
	command -v curl >/dev/null || missing+=(curl)
	((${#missing[@]} == 0)) && return
	command -v apt-get >/dev/null || die "missing ${missing[*]}; install them"
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# in_ns runs a command in the testbed's network namespace.
in_ns() { ip netns exec "$NETNS" "$@"; }

netns_exists() { ip netns list | grep -qE "^$NETNS( |\$)"; }

kubectl_ns() { in_ns "$BIN_DIR/kubectl" --kubeconfig "$RUN_DIR/kubeconfig" "$@"; }

make_netns() {
	ip netns add "$NETNS"
	ip -n "$NETNS" link set lo up
	ip -n "$NETNS" route add local "$POD_ROUTE" dev lo
	[[ -n $REAL ]] || return 0
	# The real node's address: a veth pair inside the namespace (this kernel
	# has no dummy links); the Service range is routed there so a ClusterIP
	# has a path for kube-proxy's rules to rewrite.
	ip -n "$NETNS" link add ebb-node type veth peer name ebb-node-peer
	ip -n "$NETNS" addr add "$REAL_NODE_IP/24" dev ebb-node
	ip -n "$NETNS" link set ebb-node-peer up
	ip -n "$NETNS" link set ebb-node up
	ip -n "$NETNS" route add "$SERVICE_CIDR" dev ebb-node src "$REAL_NODE_IP"
	ip netns exec "$NETNS" sysctl -qw net.ipv4.ip_forward=1
}

# ---- certificates and kubeconfigs ----

# issue NAME SUBJECT EXTENSIONS makes NAME.key and NAME.crt signed by the CA.
issue() {
	local pki=$RUN_DIR/pki
	openssl genrsa -out "$pki/$1.key" 2048 2>/dev/null
	openssl req -new -key "$pki/$1.key" -subj "$2" -out "$pki/$1.csr" 2>/dev/null
	printf '%b\n' "$3" >"$pki/$1.ext"
	openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 30 -sha256 -extfile "$pki/$1.ext" -out "$pki/$1.crt" 2>/dev/null
}

make_pki() {
	local pki=$RUN_DIR/pki client='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
	mkdir -p "$pki"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" \
		-days 30 -subj "/CN=ebb-testbed-ca" 2>/dev/null
	issue apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:$SERVICE_IP,IP:$REAL_NODE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	issue admin "/O=system:masters/CN=ebb-testbed-admin" "$client"
	issue kube-controller-manager "/CN=system:kube-controller-manager" "$client"
	issue kube-scheduler "/CN=system:kube-scheduler" "$client"
	# kwok writes node and pod status, leases and events: admin is simplest.
	issue kwok "/O=system:masters/CN=kwok-controller" "$client"
	# The aggregation layer: the API server proxies to metrics-server as
	# front-proxy-client (--requestheader-allowed-names), and metrics-server
	# reads the cluster (nodes, pods, delegated authn and authz) as itself.
	issue front-proxy-client "/CN=front-proxy-client" "$client"
	issue metrics-server "/CN=system:metrics-server" "$client"
	issue metrics-server-serving "/CN=metrics-server" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:$METRICS_SERVER_IP,DNS:metrics-server.kube-system.svc"
	if [[ -n $REAL ]]; then
		# The real node: the kubelet as system:node:NAME (the Node
		# authorizer), serving on its InternalIP; the API server's client
		# cert for it (logs, exec); kube-proxy as system:kube-proxy.
		issue kubelet "/O=system:nodes/CN=system:node:$REAL_NODE_NAME" "$client"
		issue kubelet-serving "/CN=$REAL_NODE_NAME" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:$REAL_NODE_IP,DNS:$REAL_NODE_NAME"
		issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
		issue kube-proxy "/CN=system:kube-proxy" "$client"
	fi
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

# kubeconfig USER FILE writes a kubeconfig with the certificates embedded.
kubeconfig() {
	local pki=$RUN_DIR/pki
	cat >"$2" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: ebb-testbed
		  cluster:
		    server: $APISERVER
		    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
		users:
		- name: $1
		  user:
		    client-certificate-data: $(base64 -w0 "$pki/$1.crt")
		    client-key-data: $(base64 -w0 "$pki/$1.key")
		contexts:
		- name: ebb-testbed
		  context: {cluster: ebb-testbed, user: $1}
		current-context: ebb-testbed
	EOF
}

# ---- processes ----

# start NAME ARGS... starts a component in the namespace, in its own session
# (setsid and ip netns exec both exec, so $! is the component itself).
start() {
	local name=$1
	shift
	setsid ip netns exec "$NETNS" "$BIN_DIR/$name" "$@" </dev/null >"$RUN_DIR/logs/$name.log" 2>&1 &
	echo $! >"$RUN_DIR/pids/$name.pid"
}

# ours PID NAME: is PID still the component we started (not a reused PID)?
ours() {
	[[ -r /proc/$1/cmdline ]] && tr '\0' '\n' <"/proc/$1/cmdline" | head -1 | grep -qxF "$(comp_path "$2")"
}

# fail NAME MESSAGE: a component did not come up; show why and stop.
fail() {
	log "error: $2"
	if [[ -f $RUN_DIR/logs/$1.log ]]; then
		log "last lines of $RUN_DIR/logs/$1.log:"
		tail -n 25 "$RUN_DIR/logs/$1.log" >&2
	fi
	if kubectl_ns get --raw /readyz >/dev/null 2>&1; then
		log "cluster state and warnings:"
		kubectl_ns get nodes,deployments,replicasets,pods -A -o wide >&2 || true
		kubectl_ns get events -A --field-selector type=Warning >&2 || true
	fi
	log "the testbed is left as it is for inspection; 'hack/testbed.sh down' cleans it up"
	exit 1
}

# wait_for NAME SECONDS WHAT CMD...: poll CMD once a second; while the
# component's process is alive, for at most SECONDS.
wait_for() {
	local name=$1 limit=$2 what=$3 deadline=$((SECONDS + $2)) pid
	shift 3
	pid=$(cat "$RUN_DIR/pids/$name.pid" 2>/dev/null || true)
	until "$@" >/dev/null 2>&1; do
		if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
			fail "$name" "$name exited while waiting for $what"
		fi
		((SECONDS < deadline)) || fail "$name" "$what: not within ${limit}s"
		sleep 1
	done
}

healthy() { in_ns curl -fsS --max-time 2 -k "$1"; }

start_etcd() {
	start etcd --name testbed --data-dir "$RUN_DIR/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster testbed=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
		--unsafe-no-fsync --log-level warn
	wait_for etcd 90 "etcd healthy" healthy http://127.0.0.1:2379/health
}

start_apiserver() {
	local pki=$RUN_DIR/pki
	# The audit log records who wrote each Deployment's scale (the
	# autoscaler's user agent names its pod): test/k8s checks that no two
	# replicas write one revision's scale at once.
	cat >"$RUN_DIR/audit-policy.yaml" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [update, patch]
  resources:
  - group: apps
    resources: [deployments/scale]
- level: None
POLICY
	# The real node's pods reach the API server through the `kubernetes`
	# Service: it listens on the node's address too and the lease reconciler
	# makes that the Service's endpoint.
	local real=(--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --endpoint-reconciler-type=none)
	[[ -n $REAL ]] && real=(--bind-address=0.0.0.0 --advertise-address="$REAL_NODE_IP" --endpoint-reconciler-type=lease
		--kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key"
		--kubelet-certificate-authority="$pki/ca.crt" --kubelet-preferred-address-types=InternalIP)
	start kube-apiserver --etcd-servers=http://127.0.0.1:2379 "${real[@]}" --secure-port=6443 \
		--audit-policy-file="$RUN_DIR/audit-policy.yaml" --audit-log-path="$RUN_DIR/logs/audit.log" --audit-log-maxsize=200 \
		--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
		--client-ca-file="$pki/ca.crt" --authorization-mode=Node,RBAC \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
		--service-cluster-ip-range="$SERVICE_CIDR" \
		--requestheader-client-ca-file="$pki/ca.crt" --requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--proxy-client-cert-file="$pki/front-proxy-client.crt" --proxy-client-key-file="$pki/front-proxy-client.key" \
		--enable-aggregator-routing=true \
		--allow-privileged=true --profiling=false
	wait_for kube-apiserver 180 "kube-apiserver /readyz" kubectl_ns get --raw /readyz
}

# controller_flags NAME: what kube-controller-manager and kube-scheduler share.
controller_flags() {
	local kc=$RUN_DIR/$1.kubeconfig
	printf '%s\n' --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
		--bind-address=127.0.0.1 --leader-elect=false
}

start_controllers() {
	local pki=$RUN_DIR/pki
	mapfile -t kcm < <(controller_flags kube-controller-manager)
	mapfile -t sched < <(controller_flags kube-scheduler)
	# Every default controller (deployment, replicaset, endpointslice,
	# serviceaccount and its token, garbage collector, node lifecycle, ...);
	# no node IPAM: kwok hands out pod IPs from one pool.
	# Each controller acts as its own ServiceAccount, with the roles the
	# apiserver bootstraps for it; system:kube-controller-manager alone may
	# do little.
	start kube-controller-manager "${kcm[@]}" --secure-port=10257 --controllers='*' \
		--use-service-account-credentials=true \
		--service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
		--cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
		--cluster-cidr="$POD_ROUTE" --service-cluster-ip-range="$SERVICE_CIDR" --allocate-node-cidrs=false
	start kube-scheduler "${sched[@]}" --secure-port=10259
	wait_for kube-controller-manager 90 "kube-controller-manager /healthz" healthy https://127.0.0.1:10257/healthz
	wait_for kube-scheduler 90 "kube-scheduler /healthz" healthy https://127.0.0.1:10259/healthz
}

# stages writes kwok's `fast` stages as one file for kwok --config: nodes
# become Ready at once, pods Running and Ready with an IP at once, and a pod
# marked for deletion is deleted at once (or, with EBB_TESTBED_GRACEFUL_DELETE,
# when its grace period ends).
stages() {
	local f
	[[ -s $STAGE_DIR/fast/kustomization.yaml ]] || die "no kwok stages in $STAGE_DIR; run 'hack/testbed.sh build'"
	kustomize_files "$STAGE_DIR/fast" | while read -r f; do
		if [[ -n ${EBB_TESTBED_GRACEFUL_DELETE:-} && $(basename "$f") == pod-delete.yaml ]]; then
			f=$HACK_DIR/testbed/pod-delete-graceful.yaml
		fi
		printf -- '---\n'
		cat "$f"
		printf '\n'
	done
}

start_kwok() {
	local stages=${EBB_TESTBED_STAGES:-$RUN_DIR/stages.yaml}
	[[ -n ${EBB_TESTBED_STAGES:-} ]] || stages >"$stages"
	grep -q 'kind: Stage' "$stages" || die "no kwok stages in $stages"
	start kwok --kubeconfig="$RUN_DIR/kwok.kubeconfig" --config="$stages" \
		--manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
		--cidr="$POD_CIDR" --node-ip="$NODE_IP" --node-lease-duration-seconds=40 \
		--server-address=127.0.0.1:10247
}

# start_metrics_server runs metrics-server as an aggregated API
# (v1beta1.metrics.k8s.io through a selectorless Service whose
# EndpointSlice is $METRICS_SERVER_IP:4443; --enable-aggregator-routing
# dials it, as there is no kube-proxy). It scrapes each node's kubelet at
# its InternalIP, $NODE_IP:10250 /metrics/resource: kwok serves none, so
# a test that wants resource metrics serves it (test/k8s, the test
# kubelet). Until then metrics-server logs failed scrapes and lists no pod.
start_metrics_server() {
	local pki=$RUN_DIR/pki
	metrics_server_yaml | kubectl_ns apply -f - >/dev/null
	start "metrics-server-$METRICS_SERVER_VERSION" --kubeconfig="$RUN_DIR/metrics-server.kubeconfig" \
		--authentication-kubeconfig="$RUN_DIR/metrics-server.kubeconfig" \
		--authorization-kubeconfig="$RUN_DIR/metrics-server.kubeconfig" \
		--bind-address="$METRICS_SERVER_IP" --secure-port=4443 \
		--tls-cert-file="$pki/metrics-server-serving.crt" --tls-private-key-file="$pki/metrics-server-serving.key" \
		--kubelet-insecure-tls --kubelet-preferred-address-types=InternalIP --kubelet-port=10250 \
		--metric-resolution=10s --kubelet-request-timeout=5s
	wait_for "metrics-server-$METRICS_SERVER_VERSION" 90 "the APIService v1beta1.metrics.k8s.io Available" metrics_api_available
}

metrics_api_available() {
	[[ $(kubectl_ns get apiservice v1beta1.metrics.k8s.io -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}') == True ]]
}

# metrics_server_yaml is the upstream components.yaml's API registration
# and RBAC, for a metrics-server outside the cluster.
metrics_server_yaml() {
	cat <<-EOF
		apiVersion: v1
		kind: Service
		metadata: {name: metrics-server, namespace: kube-system}
		spec:
		  ports: [{name: https, port: 443, targetPort: 4443, protocol: TCP}]
		---
		apiVersion: discovery.k8s.io/v1
		kind: EndpointSlice
		metadata:
		  name: metrics-server
		  namespace: kube-system
		  labels: {kubernetes.io/service-name: metrics-server}
		addressType: IPv4
		ports: [{name: https, port: 4443, protocol: TCP}]
		endpoints: [{addresses: ["$METRICS_SERVER_IP"], conditions: {ready: true}}]
		---
		apiVersion: apiregistration.k8s.io/v1
		kind: APIService
		metadata: {name: v1beta1.metrics.k8s.io}
		spec:
		  service: {name: metrics-server, namespace: kube-system, port: 443}
		  group: metrics.k8s.io
		  version: v1beta1
		  insecureSkipTLSVerify: true
		  groupPriorityMinimum: 100
		  versionPriority: 100
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRole
		metadata: {name: system:metrics-server}
		rules:
		- apiGroups: [""]
		  resources: [nodes/metrics]
		  verbs: [get]
		- apiGroups: [""]
		  resources: [pods, nodes]
		  verbs: [get, list, watch]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRoleBinding
		metadata: {name: system:metrics-server}
		roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:metrics-server}
		subjects: [{kind: User, name: system:metrics-server}]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRoleBinding
		metadata: {name: "metrics-server:system:auth-delegator"}
		roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
		subjects: [{kind: User, name: system:metrics-server}]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: RoleBinding
		metadata: {name: "metrics-server-auth-reader", namespace: kube-system}
		roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
		subjects: [{kind: User, name: system:metrics-server}]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRole
		metadata:
		  name: system:aggregated-metrics-reader
		  labels:
		    rbac.authorization.k8s.io/aggregate-to-admin: "true"
		    rbac.authorization.k8s.io/aggregate-to-edit: "true"
		    rbac.authorization.k8s.io/aggregate-to-view: "true"
		rules:
		- apiGroups: [metrics.k8s.io]
		  resources: [pods, nodes]
		  verbs: [get, list, watch]
	EOF
}

nodes_yaml() {
	local n
	for n in "${NODES[@]}"; do
		cat <<-EOF
			---
			apiVersion: v1
			kind: Node
			metadata:
			  name: $n
			  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
			  labels: {kubernetes.io/hostname: $n, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
		EOF
	done
}

nodes_ready() {
	local ready
	ready=$(kubectl_ns get nodes -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True)
	((ready == ${#NODES[@]}))
}

make_nodes() {
	nodes_yaml | kubectl_ns apply -f - >/dev/null
	wait_for kwok 90 "${#NODES[@]} Ready nodes" nodes_ready
}

# smoke proves the path the tests take: a Deployment's pod is scheduled and
# becomes Running and Ready with an address in the pod range.
smoke() {
	local node=kwok cidr=$POD_CIDR
	[[ -n $REAL ]] && node=kubelet cidr=$REAL_POD_CIDR
	wait_for kube-controller-manager 90 "the default ServiceAccount" kubectl_ns get serviceaccount default
	smoke_yaml | kubectl_ns apply -f - >/dev/null
	wait_for "$node" 90 "smoke pod Running and Ready with an IP in $cidr" smoke_pod_ready
	log "smoke pod ready: $(kubectl_ns get pods -l app=testbed-smoke -o 'jsonpath={.items[0].metadata.name} {.items[0].status.podIP} on {.items[0].spec.nodeName}')"
	kubectl_ns delete deployment testbed-smoke --wait=false >/dev/null
	wait_for "$node" 90 "smoke pod deleted" smoke_pod_gone
}

# smoke_yaml: the image is never pulled (kwok runs nothing); a grace period
# of 1s keeps the deletion short with EBB_TESTBED_GRACEFUL_DELETE too.
smoke_yaml() {
	local image=testbed.invalid/smoke:0 policy=IfNotPresent
	# On the real node: the sandbox image, which runs and stays.
	[[ -n $REAL ]] && image=$(awk '$1 == "pause" { print $2 }' "$(real_images)/images.txt") policy=Never
	cat <<-EOF
		apiVersion: apps/v1
		kind: Deployment
		metadata: {name: testbed-smoke, labels: {app: testbed-smoke}}
		spec:
		  replicas: 1
		  selector: {matchLabels: {app: testbed-smoke}}
		  template:
		    metadata: {labels: {app: testbed-smoke}}
		    spec:
		      terminationGracePeriodSeconds: 1
		      containers: [{name: smoke, image: "$image", imagePullPolicy: $policy}]
	EOF
}

smoke_pod_ready() {
	local out
	out=$(kubectl_ns get pods -l app=testbed-smoke -o 'jsonpath={range .items[*]}{.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.status.podIP}{"\n"}{end}')
	local net=10\.244\.0
	[[ -n $REAL ]] && net=10\.85\.0
	[[ $out =~ ^Running\ True\ $net\.[0-9]+$ ]]
}

smoke_pod_gone() { [[ -z $(kubectl_ns get pods -l app=testbed-smoke -o name) ]]; }

is_up() {
	[[ -f $RUN_DIR/kubeconfig ]] && netns_exists &&
		kubectl_ns get --raw /readyz >/dev/null 2>&1
}

cmd_up() {
	case ${1:-} in
	--real-node) REAL=1 ;;
	'') ;;
	*) usage ;;
	esac
	ensure_root up
	ensure_tools
	[[ -n $REAL ]] && ensure_node_tools
	if is_up; then
		log "already up"
		printf '%s\n' "$RUN_DIR/kubeconfig"
		return
	fi
	if [[ -d $RUN_DIR ]] || netns_exists; then
		log "cleaning up a testbed that is half up"
		local want=$REAL
		cmd_down
		REAL=$want
	fi
	set_components
	BIN_DIR=$CACHE_DIR/bin # not the one a previous up used
	cmd_build
	umask 077 # the run dir holds the CA's and admin's keys
	local start=$SECONDS
	mkdir -p "$RUN_DIR/logs" "$RUN_DIR/pids"
	printf '%s\n' "$BIN_DIR" >"$RUN_DIR/bin-dir"
	[[ -n $REAL ]] && touch "$RUN_DIR/real-node"
	[[ -n $REAL ]] && real_images >/dev/null
	make_netns
	make_pki
	for u in admin kube-controller-manager kube-scheduler kwok metrics-server; do kubeconfig "$u" "$RUN_DIR/$u.kubeconfig"; done
	mv "$RUN_DIR/admin.kubeconfig" "$RUN_DIR/kubeconfig"
	start_etcd
	start_apiserver
	start_controllers
	if [[ -n $REAL ]]; then
		start_real_node
	else
		start_kwok
		make_nodes
	fi
	smoke
	start_metrics_server
	log "up in $((SECONDS - start))s; logs in $RUN_DIR/logs; 'hack/testbed.sh run -- CMD' runs CMD inside"
	printf '%s\n' "$RUN_DIR/kubeconfig"
}

# ---- the real node ---------------------------------------------------------
#
# up --real-node runs, in the testbed's namespace, Debian's containerd (own
# config, socket and state under the run dir) with runc, a CNI bridge with
# host-local addresses from $REAL_POD_CIDR, a kubelet and kube-proxy
# (iptables), instead of kwok's nodes. containerd and the kubelet enter only
# the network namespace (nsenter --net): `ip netns exec` remounts /sys and
# hides the cgroup hierarchies from them. What they write outside the run
# dir (cgroups under /ebb-$NETNS, the pods' network namespaces, CNI's cache,
# /var/log/containers links) is removed by down. docs/testbed.md says why
# each setting is what it is.

CNI_NET=ebb-$NETNS

# comp_path NAME: the binary a component runs.
comp_path() {
	case $1 in
	containerd) command -v containerd || echo /usr/bin/containerd ;;
	*) echo "$BIN_DIR/$1" ;;
	esac
}

# start_host NAME ARGS...: like start, in the network namespace only.
start_host() {
	local name=$1
	shift
	# umask 022: up's 077 (the run dir holds keys) would make every
	# container's rootfs unreadable to a non-root user.
	setsid sh -c 'umask 022; exec "$@"' sh nsenter --net="/run/netns/$NETNS" "$(comp_path "$name")" "$@" </dev/null >"$RUN_DIR/logs/$name.log" 2>&1 &
	echo $! >"$RUN_DIR/pids/$name.pid"
}

ctr_() { ctr --address "$RUN_DIR/containerd/containerd.sock" -n k8s.io "$@"; }

# real_images: the archives make images writes (hack/images).
real_images() {
	local dir=${EBB_TESTBED_IMAGES:-$HACK_DIR/../bin/images}
	[[ -s $dir/images.txt && -s $dir/pause.tar ]] ||
		die "the real node needs the images of 'make images' (with pause) in $dir (EBB_TESTBED_IMAGES); run 'make images' first"
	(cd "$dir" && pwd)
}

ensure_node_tools() {
	local missing=()
	command -v containerd >/dev/null || missing+=(containerd)
	command -v runc >/dev/null || missing+=(runc)
	[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || missing+=(containernetworking-plugins)
	command -v iptables >/dev/null || missing+=(iptables)
	command -v nsenter >/dev/null || missing+=(util-linux)
	((${#missing[@]} == 0)) && return
	command -v apt-get >/dev/null || die "the real node needs ${missing[*]}; install them"
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# cgroup_dirs: the kubelet's cgroup root in every v1 hierarchy (or the v2 one).
cgroup_dirs() {
	local d
	if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
		echo "/sys/fs/cgroup/ebb-$NETNS"
		return
	fi
	for d in /sys/fs/cgroup/*/; do
		[[ $d == */unified/ ]] && continue
		[[ -f $d/cgroup.procs ]] && echo "${d%/}/ebb-$NETNS"
	done
}

make_cgroup_root() {
	local d
	for d in $(cgroup_dirs); do
		mkdir -p "$d"
		# A new v1 cpuset has no cpus or mems until given its parent's.
		if [[ -f $d/cpuset.cpus && -z $(cat "$d/cpuset.cpus") ]]; then
			cat "$(dirname "$d")/cpuset.cpus" >"$d/cpuset.cpus"
			cat "$(dirname "$d")/cpuset.mems" >"$d/cpuset.mems"
		fi
	done
}

start_containerd() {
	local c=$RUN_DIR/containerd images
	images=$(real_images)
	mkdir -p "$c" "$RUN_DIR/cni/net.d" "$RUN_DIR/cni/ipam"
	cat >"$c/config.toml" <<-EOF
		version = 2
		root = "$c/root"
		state = "$c/state"
		[grpc]
		  address = "$c/containerd.sock"
		[ttrpc]
		  address = "$c/containerd.sock.ttrpc"
		[debug]
		  address = "$c/debug.sock"
		[metrics]
		  address = ""
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "$(awk '$1 == "pause" { print $2 }' "$images/images.txt")"
		  restrict_oom_score_adj = true
		  enable_selinux = false
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "overlayfs"
		    default_runtime_name = "runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		        SystemdCgroup = false
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$RUN_DIR/cni/net.d"
		    max_conf_num = 1
	EOF
	cat >"$RUN_DIR/cni/net.d/10-ebb.conflist" <<-EOF
		{
		  "cniVersion": "0.4.0",
		  "name": "$CNI_NET",
		  "plugins": [
		    {
		      "type": "bridge",
		      "bridge": "ebb-cni0",
		      "isGateway": true,
		      "ipMasq": false,
		      "hairpinMode": true,
		      "ipam": {
		        "type": "host-local",
		        "dataDir": "$RUN_DIR/cni/ipam",
		        "ranges": [[{"subnet": "$REAL_POD_CIDR"}]],
		        "routes": [{"dst": "0.0.0.0/0"}]
		      }
		    },
		    {"type": "portmap", "capabilities": {"portMappings": true}}
		  ]
		}
	EOF
	start_host containerd --config "$c/config.toml"
	wait_for containerd 60 "containerd answering on $c/containerd.sock" ctr_ version
	local f
	for f in "$images"/*.tar; do
		ctr_ images import --no-unpack "$f" >/dev/null || die "ctr images import $f failed"
	done
	log "images loaded into the node's containerd: $(awk '{ printf "%s ", $1 }' "$images/images.txt")from $images"
}

start_kubelet() {
	local pki=$RUN_DIR/pki k=$RUN_DIR/kubelet
	mkdir -p "$k" "$RUN_DIR/pod-logs"
	make_cgroup_root
	cat >"$RUN_DIR/kubelet.yaml" <<-EOF
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		# v1.37 refuses cgroup v1 unless told; this kernel has v1 only.
		failCgroupV1: false
		cgroupDriver: cgroupfs
		cgroupRoot: /ebb-$NETNS
		failSwapOn: false
		containerRuntimeEndpoint: unix://$RUN_DIR/containerd/containerd.sock
		address: $REAL_NODE_IP
		port: 10250
		readOnlyPort: 0
		healthzBindAddress: 127.0.0.1
		healthzPort: 10248
		tlsCertFile: $pki/kubelet-serving.crt
		tlsPrivateKeyFile: $pki/kubelet-serving.key
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: true}
		  x509: {clientCAFile: $pki/ca.crt}
		authorization: {mode: Webhook}
		podCIDR: $REAL_POD_CIDR
		podLogsDir: $RUN_DIR/pod-logs
		serializeImagePulls: false
		# Images are loaded, never pulled: nothing may collect them, and a
		# full disk on a CI machine must not evict the tests' pods.
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
		evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
		syncFrequency: 10s
		nodeStatusUpdateFrequency: 5s
		resolvConf: ""
		shutdownGracePeriod: 0s
	EOF
	kubeconfig kubelet "$RUN_DIR/kubelet.kubeconfig"
	start_host kubelet --config="$RUN_DIR/kubelet.yaml" --kubeconfig="$RUN_DIR/kubelet.kubeconfig" \
		--hostname-override="$REAL_NODE_NAME" --node-ip="$REAL_NODE_IP" --root-dir="$k" \
		--cert-dir="$k/pki" --node-labels=type=real --v=1
}

start_kube_proxy() {
	kubeconfig kube-proxy "$RUN_DIR/kube-proxy.kubeconfig"
	cat >"$RUN_DIR/kube-proxy.yaml" <<-EOF
		apiVersion: kubeproxy.config.k8s.io/v1alpha1
		kind: KubeProxyConfiguration
		mode: iptables
		clientConnection: {kubeconfig: $RUN_DIR/kube-proxy.kubeconfig}
		hostnameOverride: $REAL_NODE_NAME
		clusterCIDR: $REAL_POD_CIDR
		bindAddress: $REAL_NODE_IP
		healthzBindAddress: 127.0.0.1:10256
		metricsBindAddress: 127.0.0.1:10249
		nodePortAddresses: ["$REAL_NODE_IP/32"]
		# conntrack's table size is the host's, not the namespace's: leave it.
		conntrack: {maxPerCore: 0}
	EOF
	start_host kube-proxy --config="$RUN_DIR/kube-proxy.yaml"
}

real_node_ready() {
	[[ $(kubectl_ns get node "$REAL_NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

kubernetes_endpoint() {
	kubectl_ns get endpointslice -n default -l kubernetes.io/service-name=kubernetes -o 'jsonpath={.items[*].endpoints[*].addresses[*]}' | grep -qF "$REAL_NODE_IP"
}

start_real_node() {
	start_containerd
	start_kubelet
	start_kube_proxy
	wait_for kubelet 90 "node $REAL_NODE_NAME Ready" real_node_ready
	wait_for kube-apiserver 60 "the kubernetes Service's endpoint $REAL_NODE_IP" kubernetes_endpoint
}

# stop_real_node: after the kubelet and kube-proxy have stopped, kill what
# runs in the pods, stop containerd and its shims, and remove what they left
# outside the run dir.
stop_real_node() {
	local sock=$RUN_DIR/containerd/containerd.sock netnses=() pid d m
	if [[ -S $sock ]]; then
		# The pods' network namespaces (/var/run/netns/cni-...), from the
		# sandboxes' specs, before the sandboxes go.
		mapfile -t netnses < <(for id in $(ctr_ containers ls -q 2>/dev/null); do
			ctr_ containers info "$id" 2>/dev/null | grep -oE '"/var/run/netns/cni-[0-9a-f-]+"' | tr -d '"'
		done | sort -u)
	fi
	# Every process in the node's cgroups is a container's.
	for d in $(cgroup_dirs); do
		[[ -d $d ]] || continue
		for pid in $(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
	done
	pid=$(cat "$RUN_DIR/pids/containerd.pid" 2>/dev/null || true)
	[[ -n $pid ]] && ours "$pid" containerd && stop_pid "$pid"
	# Its shims outlive it: they name its socket on their command line.
	for pid in $(grep -lF -- "$sock" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
		tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -qx "$sock" && stop_pid "$pid"
	done
	for m in "${netnses[@]}"; do
		umount "$m" 2>/dev/null || true
		rm -f "$m"
	done
	# The kubelet bind-mounts its root dir on itself; containerd mounts each
	# rootfs and /dev/shm under its state dir.
	for m in $(awk -v r="$RUN_DIR/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
		umount -R "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	for d in $(cgroup_dirs); do
		[[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		[[ -d $d ]] && log "warning: cgroup $d is still there"
	done
	rm -f /var/lib/cni/results/"$CNI_NET"-*
	find /var/log/containers -maxdepth 1 -lname "$RUN_DIR/*" -delete 2>/dev/null || true
	return 0
}

# remove_dead_pod_netns: a pod's network namespace whose veth went with the
# testbed's namespace (only lo left) and in which nothing runs is garbage.
remove_dead_pod_netns() {
	local m n
	sleep 2 # the kernel removes a deleted namespace's veths (and so their peers) asynchronously
	for m in /var/run/netns/cni-*; do
		[[ -e $m ]] || continue
		n=$(basename "$m")
		[[ -z $(ip netns pids "$n" 2>/dev/null) ]] || continue
		[[ $(ip -n "$n" -o link show 2>/dev/null | grep -vc ': lo:') == 0 ]] || continue
		umount "$m" 2>/dev/null || true
		rm -f "$m"
	done
}

# ---- run, down, status -----------------------------------------------------

# predownload fetches the Go modules of the module in the working directory
# while there is a network: inside the namespace there is none.
predownload() {
	[[ -n ${EBB_TESTBED_NO_DOWNLOAD:-} ]] && return
	command -v go >/dev/null || return 0
	local gomod
	gomod=$(go env GOMOD 2>/dev/null || true)
	[[ -n $gomod && $gomod != /dev/null ]] || return 0
	go mod download || die "go mod download failed in $(dirname "$gomod")"
}

cmd_run() {
	[[ ${1:-} == -- ]] && shift
	(($# > 0)) || usage
	ensure_root run
	is_up || die "the testbed is not up; run 'hack/testbed.sh up' first"
	predownload
	exec ip netns exec "$NETNS" env \
		KUBECONFIG="$RUN_DIR/kubeconfig" EBB_TESTBED=1 EBB_TESTBED_BIN="$BIN_DIR" \
		EBB_TESTBED_RUN_DIR="$RUN_DIR" EBB_TESTBED_POD_CIDR="$(pod_cidr)" EBB_TESTBED_NETNS="$NETNS" \
		EBB_TESTBED_REAL_NODE="${REAL:+$REAL_NODE_NAME}" EBB_TESTBED_NODE_IP="${REAL:+$REAL_NODE_IP}" \
		GOPROXY=off PATH="$BIN_DIR:$PATH" "$@"
}

# stop_pid PID: TERM, then KILL after 10 seconds.
stop_pid() {
	kill -TERM "$1" 2>/dev/null || return 0
	local i
	for i in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
}

cmd_down() {
	ensure_root down
	local i name pid
	for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
		name=${COMPONENTS[i]}
		if [[ $name == containerd ]]; then
			stop_real_node
			continue
		fi
		pid=$(cat "$RUN_DIR/pids/$name.pid" 2>/dev/null) || continue
		if ours "$pid" "$name"; then stop_pid "$pid"; fi
	done
	if netns_exists; then
		# What is left in the namespace was started by `run` (test processes
		# bound to pod IPs): nothing else can enter it.
		for pid in $(ip netns pids "$NETNS"); do
			log "stopping leftover process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-100)"
			stop_pid "$pid"
		done
		ip netns del "$NETNS"
	fi
	[[ -n $REAL ]] && remove_dead_pod_netns
	if [[ -n ${EBB_TESTBED_KEEP:-} ]]; then
		log "kept $RUN_DIR (EBB_TESTBED_KEEP)"
	else
		rm -rf "$RUN_DIR"
	fi
	log "down"
}

cmd_status() {
	local name pid state
	for name in "${COMPONENTS[@]}"; do
		pid=$(cat "$RUN_DIR/pids/$name.pid" 2>/dev/null || true)
		state=stopped
		[[ -n $pid ]] && ours "$pid" "$name" && state="running (pid $pid)"
		printf '%-24s %s\n' "$name" "$state"
	done
	if is_up; then printf 'kubeconfig               %s\n' "$RUN_DIR/kubeconfig"; else return 1; fi
}

cmd_logs() {
	if (($# == 0)); then
		tail -n 20 "$RUN_DIR"/logs/*.log
	else
		cat "$RUN_DIR/logs/$1.log"
	fi
}

# cmd_env prints what `run` sets, for a shell that enters the namespace itself.
cmd_env() {
	printf 'KUBECONFIG=%s\nEBB_TESTBED=1\nEBB_TESTBED_BIN=%s\nEBB_TESTBED_RUN_DIR=%s\nEBB_TESTBED_POD_CIDR=%s\nEBB_TESTBED_NETNS=%s\n' \
		"$RUN_DIR/kubeconfig" "$BIN_DIR" "$RUN_DIR" "$(pod_cidr)" "$NETNS"
	[[ -z $REAL ]] || printf 'EBB_TESTBED_REAL_NODE=%s\nEBB_TESTBED_NODE_IP=%s\n' "$REAL_NODE_NAME" "$REAL_NODE_IP"
}

pod_cidr() { if [[ -n $REAL ]]; then echo "$REAL_POD_CIDR"; else echo "$POD_CIDR"; fi; }

# load_state takes the binaries `up` used, so run, down and status work the
# same under another HOME or XDG_CACHE_HOME (sudo).
load_state() {
	if [[ -s $RUN_DIR/bin-dir ]]; then BIN_DIR=$(cat "$RUN_DIR/bin-dir"); fi
	if [[ -f $RUN_DIR/real-node ]]; then REAL=1; fi
	set_components
}

# set_components: what up starts, in order (down stops them in the reverse).
set_components() {
	COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok "metrics-server-$METRICS_SERVER_VERSION")
	[[ -n $REAL ]] && COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy "metrics-server-$METRICS_SERVER_VERSION")
	return 0
}

main() {
	local cmd=${1:-}
	(($# > 0)) && shift
	load_state
	case $cmd in
	build) cmd_build ;;
	up) cmd_up "$@" ;;
	run) cmd_run "$@" ;;
	down) cmd_down ;;
	status) cmd_status ;;
	logs) cmd_logs "$@" ;;
	env) cmd_env ;;
	*) usage ;;
	esac
}

# On one line, so bash has read all it runs before it runs it: editing this
# file while a testbed command runs cannot change what that command does.
main "$@"; exit
