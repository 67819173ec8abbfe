#!/usr/bin/env bash
# shellcheck disable=SC2317 # the probes wait_for calls look unreachable to it
# hack/testbed.sh: a real Kubernetes control plane for Ebb's integration tests.
#
#   hack/testbed.sh build          build the binaries into the cache (idempotent)
#   hack/testbed.sh up             start the testbed; prints the kubeconfig path
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
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1 # the `kubernetes` Service
APISERVER=https://127.0.0.1:6443
NODES=(ebb-node-0 ebb-node-1 ebb-node-2)
# Started in this order, stopped in the reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok "metrics-server-$METRICS_SERVER_VERSION")

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
	issue apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
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
	[[ -r /proc/$1/cmdline ]] && tr '\0' '\n' <"/proc/$1/cmdline" | head -1 | grep -qxF "$BIN_DIR/$2"
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
	start kube-apiserver --etcd-servers=http://127.0.0.1:2379 \
		--audit-policy-file="$RUN_DIR/audit-policy.yaml" --audit-log-path="$RUN_DIR/logs/audit.log" --audit-log-maxsize=200 \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 \
		--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
		--client-ca-file="$pki/ca.crt" --authorization-mode=RBAC \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
		--service-cluster-ip-range="$SERVICE_CIDR" --endpoint-reconciler-type=none \
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
	wait_for kube-controller-manager 90 "the default ServiceAccount" kubectl_ns get serviceaccount default
	smoke_yaml | kubectl_ns apply -f - >/dev/null
	wait_for kwok 90 "smoke pod Running and Ready with an IP in $POD_CIDR" smoke_pod_ready
	log "smoke pod ready: $(kubectl_ns get pods -l app=testbed-smoke -o 'jsonpath={.items[0].metadata.name} {.items[0].status.podIP} on {.items[0].spec.nodeName}')"
	kubectl_ns delete deployment testbed-smoke --wait=false >/dev/null
	wait_for kwok 90 "smoke pod deleted" smoke_pod_gone
}

# smoke_yaml: the image is never pulled (kwok runs nothing); a grace period
# of 1s keeps the deletion short with EBB_TESTBED_GRACEFUL_DELETE too.
smoke_yaml() {
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
		      containers: [{name: smoke, image: testbed.invalid/smoke:0}]
	EOF
}

smoke_pod_ready() {
	local out
	out=$(kubectl_ns get pods -l app=testbed-smoke -o 'jsonpath={range .items[*]}{.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.status.podIP}{"\n"}{end}')
	[[ $out =~ ^Running\ True\ 10\.244\.0\.[0-9]+$ ]]
}

smoke_pod_gone() { [[ -z $(kubectl_ns get pods -l app=testbed-smoke -o name) ]]; }

is_up() {
	[[ -f $RUN_DIR/kubeconfig ]] && netns_exists &&
		kubectl_ns get --raw /readyz >/dev/null 2>&1
}

cmd_up() {
	ensure_root up
	ensure_tools
	if is_up; then
		log "already up"
		printf '%s\n' "$RUN_DIR/kubeconfig"
		return
	fi
	if [[ -d $RUN_DIR ]] || netns_exists; then
		log "cleaning up a testbed that is half up"
		cmd_down
	fi
	BIN_DIR=$CACHE_DIR/bin # not the one a previous up used
	cmd_build
	umask 077 # the run dir holds the CA's and admin's keys
	local start=$SECONDS
	mkdir -p "$RUN_DIR/logs" "$RUN_DIR/pids"
	printf '%s\n' "$BIN_DIR" >"$RUN_DIR/bin-dir"
	make_netns
	make_pki
	for u in admin kube-controller-manager kube-scheduler kwok metrics-server; do kubeconfig "$u" "$RUN_DIR/$u.kubeconfig"; done
	mv "$RUN_DIR/admin.kubeconfig" "$RUN_DIR/kubeconfig"
	start_etcd
	start_apiserver
	start_controllers
	start_kwok
	make_nodes
	smoke
	start_metrics_server
	log "up in $((SECONDS - start))s; logs in $RUN_DIR/logs; 'hack/testbed.sh run -- CMD' runs CMD inside"
	printf '%s\n' "$RUN_DIR/kubeconfig"
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
		EBB_TESTBED_RUN_DIR="$RUN_DIR" EBB_TESTBED_POD_CIDR="$POD_CIDR" EBB_TESTBED_NETNS="$NETNS" \
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
		"$RUN_DIR/kubeconfig" "$BIN_DIR" "$RUN_DIR" "$POD_CIDR" "$NETNS"
}

# load_state takes the binaries `up` used, so run, down and status work the
# same under another HOME or XDG_CACHE_HOME (sudo).
load_state() {
	if [[ -s $RUN_DIR/bin-dir ]]; then BIN_DIR=$(cat "$RUN_DIR/bin-dir"); fi
}

main() {
	local cmd=${1:-}
	(($# > 0)) && shift
	load_state
	case $cmd in
	build) cmd_build ;;
	up) cmd_up ;;
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
