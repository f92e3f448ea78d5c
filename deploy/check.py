#!/usr/bin/env python3
"""Sanity checks for deploy/: parses every YAML file, the Grafana dashboard and
both HAProxy configurations (with `haproxy -c` too when HAProxy is installed),
and asserts the facts deploy/README.md promises.

    python3 deploy/check.py          (needs python3-yaml: apt-get install -y python3-yaml)
    python3 deploy/check.py --require-tools --kubernetes-validate PATH

With --kubernetes-validate, the Kubernetes objects `kubectl apply -k deploy/k8s`
would create (the listed resources and the generated ConfigMaps, assembled
here without kubectl) are written to a temporary file and checked against the
API's schemas by that kubernetes-validate executable, strictly (unknown fields
are errors), for each version in K8S_VERSIONS. With --require-tools, a missing
haproxy, promtool or kubernetes-validate is a failure instead of a skip.

Exits 0 when everything holds, 1 with one line per failure otherwise.
"""
import argparse
import ipaddress
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

try:
    import yaml
except ImportError:
    sys.exit("check.py: the yaml module is missing; apt-get install -y python3-yaml")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
failures = []
# The version images are tagged with (README, "Image").
WORKSPACE_VERSION = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]

parser = argparse.ArgumentParser(description="Check the deployment files in deploy/.")
parser.add_argument("--kubernetes-validate", metavar="PATH",
                    help="kubernetes-validate executable to check the rendered manifests with")
parser.add_argument("--require-tools", action="store_true",
                    help="fail when haproxy, promtool or kubernetes-validate is missing")
args = parser.parse_args()

# Kubernetes versions the manifests are validated against: the oldest one
# these files promise to work on, and the newest kubernetes-validate knows.
K8S_VERSIONS = ("1.31.0", "1.37.0")
# A pod spec cannot set the file-descriptor limit; these are the limits
# container runtimes commonly give, the smallest one first. The balancer
# must start under each.
RUNTIME_NOFILE_LIMITS = (65536, 1048576)

# name -> (type, labels)
METRICS = {
    "jumpgate_connections_open": ("gauge", set()),
    "jumpgate_lobbies_live": ("gauge", {"rule_set"}),
    "jumpgate_games_live": ("gauge", {"rule_set"}),
    "jumpgate_moves_accepted_total": ("counter", {"rule_set"}),
    "jumpgate_moves_rejected_total": ("counter", {"reason"}),
    "jumpgate_decode_errors_total": ("counter", {"code"}),
    "jumpgate_clock_forfeits_total": ("counter", {"rule_set"}),
    "jumpgate_series_finished_total": ("counter", {"outcome"}),
    "jumpgate_stake_points_escrowed_total": ("counter", set()),
    "jumpgate_stake_points_paid_total": ("counter", set()),
    "jumpgate_stake_points_refunded_total": ("counter", set()),
    "jumpgate_redis_op_seconds": ("histogram", {"op"}),
    "jumpgate_redis_errors_total": ("counter", {"op"}),
    "jumpgate_bot_think_seconds": ("histogram", {"level"}),
    "jumpgate_search_queue_depth": ("gauge", {"level"}),
    "jumpgate_search_wait_seconds": ("histogram", {"level"}),
    "jumpgate_searches_total": ("counter", {"level"}),
    "jumpgate_search_jobs_reclaimed_total": ("counter", set()),
    "jumpgate_search_workers_alive": ("gauge", set()),
    "jumpgate_search_refusals_total": ("counter", set()),
    "jumpgate_move_handling_seconds": ("histogram", set()),
    "jumpgate_room_mailbox_wait_seconds": ("histogram", set()),
    "jumpgate_rooms_unloaded_total": ("counter", set()),
    "jumpgate_rooms_woken_total": ("counter", set()),
    "jumpgate_correspondence_expired_total": ("counter", set()),
    "jumpgate_slow_consumers_dropped_total": ("counter", set()),
    "jumpgate_room_handovers_total": ("counter", set()),
    "jumpgate_room_takeovers_total": ("counter", set()),
    "jumpgate_rooms_received_total": ("counter", {"how"}),
    "jumpgate_rooms_sent_home_total": ("counter", set()),
    "jumpgate_writes_fenced_total": ("counter", set()),
    "jumpgate_writes_unconfirmed_total": ("counter", set()),
    "jumpgate_store_conflicts_total": ("counter", set()),
    "jumpgate_writes_expired_total": ("counter", {"write"}),
    "jumpgate_edge_refusals_total": ("counter", {"reason"}),
    "jumpgate_messages_throttled_total": ("counter", set()),
    "jumpgate_http_connections_open": ("gauge", set()),
    "jumpgate_solo_games_live": ("gauge", set()),
    "jumpgate_rooms_awaiting_store": ("gauge", set()),
    "jumpgate_resume_seconds": ("gauge", set()),
    "jumpgate_resume_rooms_left": ("gauge", set()),
    "jumpgate_resume_rooms_total": ("counter", {"outcome"}),
    "jumpgate_build_info": ("gauge", {"version", "commit"}),
    "jumpgate_rooms_unresumable": ("gauge", set()),
    "jumpgate_connections_max": ("gauge", set()),
}
TARGET_LABELS = {"instance", "job", "namespace", "pod"}


def check(cond, message):
    if not cond:
        failures.append(message)
    return cond


def pinned_image(image):
    """Whether an image reference names one build: a digest, or a tag with a
    full version (1.2.3, optionally with a suffix such as -alpine or -bookworm).
    Refuses no tag, `latest`, and major-only or major.minor tags, which move."""
    image = str(image)
    if re.search(r"@sha256:[0-9a-f]{64}$", image):
        return True
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:          # no tag (a ':' only in a registry's port)
        return False
    return bool(re.fullmatch(r"v?\d+\.\d+\.\d+([-_.+][A-Za-z0-9_.-]+)?", tag))


def broad_networks(spec):
    """The entries of a trusted-proxies list wider than a cluster's pod network:
    IPv4 shorter than /14, IPv6 shorter than /48 (a /8 trusts a whole private range)."""
    wide = []
    for entry in [e.strip() for e in str(spec).split(",") if e.strip()]:
        try:
            net = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            failures.append(f"trusted proxies: cannot read {entry!r}")
            continue
        if net.prefixlen < (14 if net.version == 4 else 48):
            wide.append(entry)
    return wide


def load_yaml(path):
    try:
        return list(yaml.safe_load_all(path.read_text()))
    except yaml.YAMLError as e:
        failures.append(f"{path.relative_to(HERE)}: not valid YAML: {e}")
        return []


# --- every YAML file parses -------------------------------------------------
docs = {}
for path in sorted(HERE.rglob("*.y*ml")):
    docs[path.relative_to(HERE).as_posix()] = load_yaml(path)
check(docs, "no YAML files found in deploy/")


def env_of(service):
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return env


def seconds(text):
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", str(text).strip())
    check(m and str(text).strip(), f"cannot read duration {text!r}")
    return int(m.group(1) or 0) * 60 + float(m.group(2) or 0) if m else 0


def haproxy_sections(text):
    """Section header ("frontend public", ...) -> its lines, comments and blanks dropped."""
    sections, current = {}, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            current = " ".join(line.split())
            sections[current] = []
        elif current:
            sections[current].append(" ".join(line.split()))
    return sections


def word_after(words, key, default):
    """The value of `key` in a keyword list such as a default-server line."""
    return words[words.index(key) + 1] if key in words[:-1] else default


def haproxy_duration(text):
    m = re.fullmatch(r"(\d+)(ms|s)?", text)
    check(m, f"cannot read HAProxy duration {text!r}")
    return int(m.group(1)) / (1000 if m.group(2) == "ms" else 1) if m else 0


def check_routing(name, cfg):
    """What every HAProxy configuration here must do to route rooms (README, "Routing")."""
    sections = haproxy_sections(cfg)
    front = sections.get("frontend public", [])
    back = sections.get("backend jumpgate", [])
    check(front and back, f"{name}: needs 'frontend public' and 'backend jumpgate'")
    text = "\n".join(front + back)
    check("url_param(room)" in text, f"{name}: does not route /ws by ?room=")
    check("path_beg /r/" in text and "field(3,/)" in text, f"{name}: does not route /r/CODE by code")
    check("regsub(^S,)" in text, f"{name}: does not route solo ids (S + code) by their code")
    check("^[2-9A-HJ-NP-Z]{8}$" in text, f"{name}: does not drop malformed codes")
    check(any(l.startswith("http-request deny deny_status 404 if { path /metrics }") for l in front),
          f"{name}: /metrics is not denied")
    check("balance hash var(txn.room)" in back, f"{name}: must balance by 'hash var(txn.room)'")
    check("hash-type consistent" in back, f"{name}: must use 'hash-type consistent'")
    # The static shards are gone: no rule may pin a room to a server by hand.
    for word in ("crc32", "use-server", "srv_is_up", "http-request return status 503"):
        check(word not in cfg, f"{name}: still has the static shard rule {word!r}")
    check("http-check send meth GET uri /readyz" in back and "http-check expect status 200" in back,
          f"{name}: health check must be GET /readyz expecting 200")
    check(re.search(r"^option redispatch( -?[1-9]\d*)?$", text, re.M), f"{name}: no 'option redispatch' (not 0)")
    retries = re.search(r"^retries (\d+)$", text, re.M)
    check(retries and int(retries.group(1)) >= 1, f"{name}: needs 'retries' >= 1 for redispatch")
    default = next((l for l in back if l.startswith("default-server ")), "").split()
    inter = haproxy_duration(word_after(default, "inter", "2s"))
    fall = int(word_after(default, "fall", "3"))
    check("check" in default, f"{name}: default-server does not enable checks")
    check(inter * fall <= 3, f"{name}: a dead instance stays in the ring {inter * fall}s (inter x fall); keep it <= 3s")
    defaults = sections.get("defaults", [])
    check(any(l.startswith("timeout tunnel ") for l in defaults), f"{name}: no 'timeout tunnel' for WebSockets")
    return sections


# Descriptors HAProxy needs beyond two per connection (listeners, checks, DNS,
# logs): measured at about 30 with these files; rounded up.
HAPROXY_FD_RESERVE = 100


def check_fd_budget(name, sections, limits, where):
    """HAProxy refuses to start when an explicit maxconn needs more file
    descriptors (two per connection, plus a reserve) than its hard limit.
    Either maxconn fits every limit in `limits`, or there is no maxconn and
    fd-hard-limit bounds the one HAProxy derives from the limit."""
    glob = [l.split() for l in sections.get("global", [])]
    value = {w[0]: w[1] for w in glob if len(w) == 2 and w[1].isdigit()}
    maxconn, ulimit_n, fd_hard = (int(value[k]) if k in value else None
                                  for k in ("maxconn", "ulimit-n", "fd-hard-limit"))
    if maxconn is None:
        check(fd_hard, f"{name}: without a global maxconn, set fd-hard-limit (HAProxy sizes maxconn "
                       f"from the descriptor limit, which may be huge)")
        return
    need = 2 * maxconn + HAPROXY_FD_RESERVE
    if ulimit_n is not None:
        check(ulimit_n >= need, f"{name}: ulimit-n {ulimit_n} is below what maxconn {maxconn} needs ({need})")
    for limit in limits:
        check(limit >= need, f"{name}: maxconn {maxconn} needs about {need} file descriptors, more than "
                             f"{where} ({limit}); HAProxy would refuse to start. Lower maxconn or raise the limit")


# --- compose ------------------------------------------------------------------
compose = (docs.get("compose.yaml") or [None])[0]
jumpgates, compose_routing = {}, None
cfg_path = HERE / "haproxy.cfg"
if check(isinstance(compose, dict), "compose.yaml: missing or empty"):
    services = compose.get("services") or {}
    redis = services.get("redis")
    for name, svc in services.items():
        if "image" in svc:
            check(pinned_image(svc["image"]), f"compose.yaml: {name} image {svc['image']!r} is not pinned to a "
                                              f"full version (x.y.z) or a digest")
    if check(redis is not None, "compose.yaml: no redis service"):
        check(str(redis.get("image", "")).startswith("redis:7"), "compose.yaml: redis image is not redis:7")
        cmd = redis.get("command")
        cmd = " ".join(cmd) if isinstance(cmd, list) else str(cmd)
        check("--appendonly yes" in cmd, "compose.yaml: redis is not started with --appendonly yes")
        check("--appendfsync everysec" in cmd, "compose.yaml: redis is not started with --appendfsync everysec")
        check(any(str(v).endswith(":/data") for v in redis.get("volumes") or []),
              "compose.yaml: redis /data is not on a volume")
    def is_worker(svc):
        entry = svc.get("entrypoint") or svc.get("command") or []
        entry = " ".join(map(str, entry)) if isinstance(entry, list) else str(entry)
        return "bot-worker" in entry
    jumpgates = {n: s for n, s in services.items()
                 if "JUMPGATE_REDIS_URL" in env_of(s) and not is_worker(s)}
    workers = {n: s for n, s in services.items() if is_worker(s)}
    # The computer's searchers: on the instances' Redis, with their metrics.
    check(workers, "compose.yaml: no bot-worker service (README, \"Solo play\")")
    for name, svc in workers.items():
        env = env_of(svc)
        check(env.get("JUMPGATE_REDIS_URL", "").startswith("redis://redis:"),
              f"compose.yaml: {name} does not use the redis service")
        check(str(svc.get("image", "")) == f"jumpgate:{WORKSPACE_VERSION}",
              f"compose.yaml: {name} image is {svc.get('image')!r}, want jumpgate:{WORKSPACE_VERSION}")
        check(str(env.get("JUMPGATE_METRICS_LISTEN", "")).startswith("0.0.0.0:"),
              f"compose.yaml: {name} does not serve its metrics on 0.0.0.0")
    check(len(jumpgates) >= 3, f"compose.yaml: expected at least three jumpgate services, found {sorted(jumpgates)}")
    lbs = {n: s for n, s in services.items() if re.match(r"(haproxy|nginx)", str(s.get("image", "")))}
    check(len(lbs) == 1, "compose.yaml: expected one load balancer (haproxy or nginx)")
    for name, svc in jumpgates.items():
        check(str(svc.get("image", "")) == f"jumpgate:{WORKSPACE_VERSION}",
              f"compose.yaml: {name} image is {svc.get('image')!r}, want jumpgate:{WORKSPACE_VERSION} "
              f"(the workspace version)")
    # The instances believe X-Forwarded-For from the balancer's fixed address only.
    lb_addresses = {str(net.get("ipv4_address")) for lb in lbs.values()
                    for net in (lb.get("networks") or {}).values() if isinstance(lb.get("networks"), dict)
                    and isinstance(net, dict) and net.get("ipv4_address")}
    for name, svc in jumpgates.items():
        trusted = str(env_of(svc).get("JUMPGATE_TRUSTED_PROXIES", ""))
        check(trusted and {t.strip() for t in trusted.split(",")} <= lb_addresses,
              f"compose.yaml: {name} JUMPGATE_TRUSTED_PROXIES {trusted!r} must be the balancer's fixed "
              f"address {sorted(lb_addresses)}")
    secrets = {env_of(s).get("JUMPGATE_TOKEN_SECRET") for s in jumpgates.values()}
    check(len(secrets) == 1 and None not in secrets,
          "compose.yaml: jumpgate instances must share one JUMPGATE_TOKEN_SECRET")
    ids = [env_of(s).get("JUMPGATE_INSTANCE_ID") for s in jumpgates.values()]
    check(len([i for i in ids if i]) == len({i for i in ids if i}),
          f"compose.yaml: JUMPGATE_INSTANCE_ID values must be unique, got {ids}")
    for name, svc in jumpgates.items():
        env = env_of(svc)
        check(str(env.get("JUMPGATE_LISTEN", "")).startswith("0.0.0.0:"),
              f"compose.yaml: {name} does not listen on 0.0.0.0")
        check(env.get("JUMPGATE_REDIS_URL", "").startswith("redis://redis:"),
              f"compose.yaml: {name} does not use the redis service")
        grace_s = int(env.get("JUMPGATE_SHUTDOWN_GRACE_MS", 10000)) / 1000
        check(seconds(svc.get("stop_grace_period", "10s")) > grace_s,
              f"compose.yaml: {name} stop_grace_period must exceed the shutdown grace ({grace_s}s)")
        test = " ".join(map(str, (svc.get("healthcheck") or {}).get("test") or []))
        check("/healthz" in test, f"compose.yaml: {name} has no healthcheck on /healthz")
        # The operator API: its own port, published on the host's loopback only,
        # its token from the environment, never written in the file.
        admin_port = str(env.get("JUMPGATE_ADMIN_LISTEN", "")).rpartition(":")[2]
        if admin_port:
            check(admin_port != str(env.get("JUMPGATE_LISTEN", "")).rpartition(":")[2],
                  f"compose.yaml: {name} serves the operator API on its public port")
            for port in svc.get("ports") or []:
                if str(port).rpartition(":")[2] == admin_port:
                    check(str(port).startswith("127.0.0.1:"),
                          f"compose.yaml: {name} publishes the operator API beyond the host's loopback")
        token = str(env.get("JUMPGATE_ADMIN_TOKEN", ""))
        check(not token or token.startswith("${"),
              f"compose.yaml: {name} has an admin token written in the file; take it from the environment")
    # HAProxy config: mounted, and its servers are the compose services.
    if check(cfg_path.exists(), "haproxy.cfg is missing"):
        cfg = cfg_path.read_text()
        for (name, lb) in lbs.items():
            check(any("haproxy.cfg:" in str(v) for v in lb.get("volumes") or []),
                  f"compose.yaml: {name} does not mount haproxy.cfg")
        compose_routing = check_routing("haproxy.cfg", cfg)
        for (name, lb) in lbs.items():
            nofile = (lb.get("ulimits") or {}).get("nofile")
            nofile = nofile.get("hard") if isinstance(nofile, dict) else nofile
            if check(isinstance(nofile, int), f"compose.yaml: {name} needs ulimits: nofile (haproxy.cfg's maxconn "
                                              f"depends on it)"):
                check_fd_budget("haproxy.cfg", compose_routing, [nofile], f"compose.yaml's {name} nofile")
        servers = re.findall(r"^\s*server\s+(\S+)\s+(\S+?):(\d+)", cfg, re.M)
        check({host for _, host, _ in servers} == set(jumpgates),
              f"haproxy.cfg: servers {servers} do not match compose services {sorted(jumpgates)}")
        ids = re.findall(r"^\s*server\s.*\sid\s+(\d+)", cfg, re.M)
        check(len(ids) == len(servers) == len(set(ids)),
              "haproxy.cfg: every server needs its own fixed 'id' (the ring is built from the ids)")

# --- Kubernetes -----------------------------------------------------------------
# What `kubectl apply -k deploy/k8s` creates: the resources kustomization.yaml
# lists and the ConfigMaps it generates from files beside it. (kustomize also
# suffixes each generated name with a hash of its content and rewrites the
# references to it; the checks below use the unsuffixed names.)
K8S = HERE / "k8s"
kust = (docs.get("k8s/kustomization.yaml") or [{}])[0] or {}
listed = list(kust.get("resources") or [])
generators = {g.get("name"): g for g in kust.get("configMapGenerator") or []}
generator_inputs = set()


def read_env_file(path):
    """A kustomize env file: VARIABLE=value per line, blank lines and # comments
    skipped; the value is taken verbatim (quotes and trailing text included)."""
    data = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        where = f"k8s/{path.name}:{n}"
        if check(sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key), f"{where}: not VARIABLE=value"):
            check(key not in data, f"{where}: {key} is set twice")
            check(not value.startswith(('"', "'")), f"{where}: the quotes would become part of {key}'s value")
            check(" #" not in value, f"{where}: a comment after a value becomes part of it")
            data[key] = value
    return data


def generated_configmap(gen):
    data = {}
    for entry in gen.get("files") or []:
        key, _, rel = entry.partition("=") if "=" in entry else (pathlib.Path(entry).name, "", entry)
        generator_inputs.add(rel)
        if check((K8S / rel).is_file(), f"k8s/kustomization.yaml: generator {gen.get('name')} reads missing {rel}"):
            data[key] = (K8S / rel).read_text()
    for rel in (gen.get("envs") or []) + ([gen["env"]] if gen.get("env") else []):
        generator_inputs.add(rel)
        if check((K8S / rel).is_file(), f"k8s/kustomization.yaml: generator {gen.get('name')} reads missing {rel}"):
            data.update(read_env_file(K8S / rel))
    metadata = {"name": gen.get("name")}
    labels = (gen.get("options") or {}).get("labels")
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


rendered = []
for rel in listed:
    if check(f"k8s/{rel}" in docs, f"k8s/kustomization.yaml lists {rel}, which is not a YAML file in k8s/"):
        rendered += [d for d in docs[f"k8s/{rel}"] if d is not None]
listed_configmaps = [d for d in rendered if isinstance(d, dict) and d.get("kind") == "ConfigMap"]
rendered += [generated_configmap(g) for g in generators.values()]
k8s = [d for d in rendered if isinstance(d, dict) and "kind" in d and "apiVersion" in d]
check(len(k8s) == len(rendered), "k8s: something kustomization.yaml lists is not a Kubernetes object")

# Every file in k8s/ is something apply -k uses: the kustomization, an object
# file it lists, or a generator's input. Anything else (Prometheus
# configuration, say) breaks `kubectl apply -f` and misleads readers.
for path in sorted(p for p in K8S.iterdir() if p.is_file()):
    if path.name == "kustomization.yaml":
        continue
    if path.suffix in (".yaml", ".yml"):
        ds = [d for d in docs.get(f"k8s/{path.name}", []) if d is not None]
        check(ds and all(isinstance(d, dict) and "kind" in d and "apiVersion" in d for d in ds),
              f"k8s/{path.name}: not a Kubernetes object; keep it outside k8s/")
        check(path.name in listed, f"k8s/kustomization.yaml does not list {path.name}")
    else:
        check(path.name in generator_inputs,
              f"k8s/{path.name}: neither an object file kustomization.yaml lists nor a generator's input")

# The Secret is the operator's: if apply -k managed it, every apply would put
# the placeholders back and new pods would refuse to start.
check(not any(d["kind"] == "Secret" for d in k8s),
      "k8s: a Secret is among what apply -k manages; every apply would overwrite the operator's values "
      "(keep the example in k8s-examples/)")
example_secret = next((d for d in docs.get("k8s-examples/secret.yaml", []) if isinstance(d, dict)), {})
check({"JUMPGATE_TOKEN_SECRET", "JUMPGATE_ADMIN_TOKEN"} <= set(example_secret.get("stringData") or {}),
      "k8s-examples/secret.yaml: the example Secret must show JUMPGATE_TOKEN_SECRET and JUMPGATE_ADMIN_TOKEN")

# Settings come from generated ConfigMaps, whose hashed names roll the pods
# when the content changes; a literal ConfigMap would not.
check(not listed_configmaps, "k8s: ConfigMaps must come from configMapGenerator (a literal one does not roll "
                             "the pods when it changes)")
check(generators.get("jumpgate", {}).get("envs"),
      "k8s/kustomization.yaml: generate the server's ConfigMap jumpgate from an env file (envs:)")
check("haproxy.cfg" in (generators.get("jumpgate-balancer", {}).get("files") or []),
      "k8s/kustomization.yaml does not generate the balancer's ConfigMap jumpgate-balancer from haproxy.cfg")

by_kind = {}
for d in k8s:
    by_kind.setdefault(d["kind"], []).append(d)


def named(kind, name):
    return next((d for d in by_kind.get(kind, []) if d.get("metadata", {}).get("name") == name), None)


def probe_path(container, probe):
    return (container.get(probe) or {}).get("httpGet", {}).get("path")


def selects(selector, template):
    labels = template.get("metadata", {}).get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


configmap = (named("ConfigMap", "jumpgate") or {}).get("data") or {}
check(configmap, "k8s: no ConfigMap jumpgate with data")
check("JUMPGATE_TOKEN_SECRET" not in configmap, "k8s: the token secret must not be in the ConfigMap")
check("JUMPGATE_INSTANCE_ID" not in configmap, "k8s ConfigMap: JUMPGATE_INSTANCE_ID would be shared by every pod")
shutdown_ms = int(configmap.get("JUMPGATE_SHUTDOWN_GRACE_MS", 10000))
check(configmap.get("JUMPGATE_LISTEN", "").startswith("0.0.0.0:"), "k8s ConfigMap: JUMPGATE_LISTEN must be 0.0.0.0:...")

check("JUMPGATE_ADMIN_TOKEN" not in configmap, "k8s: the admin token must not be in the ConfigMap")
admin_listen = configmap.get("JUMPGATE_ADMIN_LISTEN", "")
if admin_listen:
    check(admin_listen.startswith("127.0.0.1:"),
          "k8s ConfigMap: JUMPGATE_ADMIN_LISTEN must be on the pod's loopback (reach it with kubectl port-forward)")
    check(admin_listen.rpartition(":")[2] != configmap.get("JUMPGATE_LISTEN", "").rpartition(":")[2],
          "k8s ConfigMap: the operator API must not share the public port")

# Trusted proxies: what the operator's cluster uses, never a whole private range.
trusted = configmap.get("JUMPGATE_TRUSTED_PROXIES", "")
check(trusted, "k8s: JUMPGATE_TRUSTED_PROXIES is not set (every player would share the balancer's limits)")
check(not broad_networks(trusted), f"k8s: JUMPGATE_TRUSTED_PROXIES {trusted!r} trusts {broad_networks(trusted)}, "
                                   f"a whole private range; set your pod CIDR (and Ingress addresses)")

# Images by version: a floating tag changes what runs without a change here.
for d in by_kind.get("Deployment", []):
    for c in d["spec"]["template"]["spec"].get("containers", []) + d["spec"]["template"]["spec"].get("initContainers", []):
        check(pinned_image(c.get("image", "")), f"k8s: {d['metadata']['name']}/{c.get('name')} image "
                                                f"{c.get('image')!r} is not pinned to a full version or a digest")

worker = named("Deployment", "jumpgate-bot-worker")
if check(worker, "k8s: no Deployment jumpgate-bot-worker (the computer's searchers)"):
    wc = worker["spec"]["template"]["spec"]["containers"][0]
    check(wc.get("command", [])[:2] == ["jumpgate", "bot-worker"],
          "k8s bot-worker: the container must run `jumpgate bot-worker`")
    wenv = {e.get("name"): e for e in wc.get("env") or []}
    check("JUMPGATE_REDIS_URL" in wenv, "k8s bot-worker: JUMPGATE_REDIS_URL is not set")
    check((wc.get("resources") or {}).get("limits"), "k8s bot-worker: resources limits missing")
    check((wc.get("securityContext") or {}).get("allowPrivilegeEscalation") is False,
          "k8s bot-worker: allowPrivilegeEscalation not false")

deployment = named("Deployment", "jumpgate")
if check(deployment, "k8s: no Deployment jumpgate"):
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    check(isinstance(spec.get("replicas"), int) and spec["replicas"] >= 1, "k8s Deployment: replicas must be a count")
    rolling = spec.get("strategy", {}).get("rollingUpdate", {})
    check(str(rolling.get("maxUnavailable")) == "0" and str(rolling.get("maxSurge")) not in ("0", "None"),
          "k8s Deployment: rolling updates must surge (maxSurge >= 1) and never run short (maxUnavailable 0)")
    container = pod["containers"][0]
    for probe, want in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        got = probe_path(container, probe)
        check(got == want, f"k8s Deployment: {probe} path is {got!r}, want {want}")
    env = {e["name"]: e for e in container.get("env", [])}
    if "JUMPGATE_INSTANCE_ID" in env:
        check(env["JUMPGATE_INSTANCE_ID"].get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
              "k8s Deployment: JUMPGATE_INSTANCE_ID must come from the pod name (a fixed value is shared by every pod)")
    pre_stop = 0
    cmd = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command") or []
    if len(cmd) == 2 and cmd[0] == "sleep":
        pre_stop = float(cmd[1])
    grace = pod.get("terminationGracePeriodSeconds", 30)
    need = shutdown_ms / 1000 + pre_stop
    check(grace >= need, f"k8s Deployment: terminationGracePeriodSeconds {grace} < shutdown grace "
                         f"{shutdown_ms / 1000}s + preStop {pre_stop}s")
    check(grace > need, "k8s Deployment: terminationGracePeriodSeconds leaves no margin")
    psc, csc = pod.get("securityContext", {}), container.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True or csc.get("runAsNonRoot") is True, "k8s Deployment: runAsNonRoot not set")
    check((csc.get("runAsUser") or psc.get("runAsUser") or 0) != 0, "k8s Deployment: runs as uid 0")
    check(csc.get("allowPrivilegeEscalation") is False, "k8s Deployment: allowPrivilegeEscalation not false")
    res = container.get("resources", {})
    check(res.get("requests") and res.get("limits"), "k8s Deployment: resources requests/limits missing")
    ann = spec["template"]["metadata"].get("annotations", {})
    check(ann.get("prometheus.io/scrape") == "true", "k8s Deployment: prometheus.io/scrape annotation missing")
    ports = {p["containerPort"] for p in container.get("ports", [])}
    check(str(ann.get("prometheus.io/port")) in {str(p) for p in ports},
          "k8s Deployment: prometheus.io/port is not a container port")
    check(ann.get("prometheus.io/port") == configmap.get("JUMPGATE_METRICS_LISTEN", "").rpartition(":")[2],
          "k8s: prometheus.io/port differs from JUMPGATE_METRICS_LISTEN's port")
    check(re.search(r"(^|/)jumpgate:" + re.escape(WORKSPACE_VERSION) + "$", str(container.get("image", ""))),
          f"k8s Deployment: image {container.get('image')!r} is not jumpgate:{WORKSPACE_VERSION} (the workspace version)")
    refs = {(k, v.get("name")) for item in container.get("envFrom", []) for k, v in item.items()}
    check(("configMapRef", "jumpgate") in refs, "k8s Deployment: envFrom does not read the generated ConfigMap jumpgate")
    check(("secretRef", "jumpgate") in refs, "k8s Deployment: envFrom does not read the operator's Secret jumpgate")

    pdbs = [d for d in by_kind.get("PodDisruptionBudget", [])
            if selects(d["spec"].get("selector", {}).get("matchLabels"), spec["template"])]
    check(len(pdbs) == 1 and str(pdbs[0]["spec"].get("maxUnavailable")) == "1",
          "k8s: the instances need one PodDisruptionBudget with maxUnavailable 1")

# The balancer: HAProxy with k8s/haproxy.cfg, in front of a headless Service.
balancer = named("Deployment", "jumpgate-balancer")
headless = named("Service", "jumpgate-instances")
public = named("Service", "jumpgate")
k8s_cfg_path = HERE / "k8s" / "haproxy.cfg"
if check(balancer and headless and public and k8s_cfg_path.exists(),
         "k8s: needs Deployment jumpgate-balancer, Services jumpgate and jumpgate-instances, and k8s/haproxy.cfg"):
    check(balancer["spec"].get("replicas") == 1,
          "k8s balancer: one replica (replicas may fill their server slots differently and disagree on rooms)")
    check(headless["spec"].get("clusterIP") == "None", "k8s: Service jumpgate-instances must be headless")
    if deployment:
        check(selects(headless["spec"].get("selector"), deployment["spec"]["template"]),
              "k8s: Service jumpgate-instances does not select the instances")
    check(selects(public["spec"].get("selector"), balancer["spec"]["template"]),
          "k8s: the public Service jumpgate does not select the balancer")
    lb = balancer["spec"]["template"]["spec"]["containers"][0]
    check(str(lb.get("image", "")).startswith("haproxy:"), "k8s balancer: not an haproxy image")
    lb_env = {e["name"]: e.get("value", "") for e in lb.get("env", [])}
    check(lb_env.get("JUMPGATE_INSTANCES", "").startswith("jumpgate-instances."),
          "k8s balancer: JUMPGATE_INSTANCES must name the headless Service jumpgate-instances")
    k8s_cfg = k8s_cfg_path.read_text()
    k8s_routing = check_routing("k8s/haproxy.cfg", k8s_cfg)
    check(re.search(r'^\s*server-template\s+\S+\s+\d+\s+"\$\{JUMPGATE_INSTANCES\}:8080"', k8s_cfg, re.M),
          "k8s/haproxy.cfg: servers must come from server-template over ${JUMPGATE_INSTANCES}")
    # Same routing as compose: the frontend, and the backend up to its server lines.
    if compose_routing is not None:
        def routing_part(sections):
            back = [l for l in sections.get("backend jumpgate", [])
                    if not l.startswith(("server ", "server-template "))]
            back = [re.sub(r" resolvers \S+ init-addr \S+$", "", l) for l in back]
            return sections.get("frontend public"), back
        check(routing_part(compose_routing) == routing_part(k8s_routing),
              "k8s/haproxy.cfg: frontend public / backend jumpgate differ from haproxy.cfg (keep them the same)")
    check_fd_budget("k8s/haproxy.cfg", k8s_routing, RUNTIME_NOFILE_LIMITS, "a container runtime's usual nofile limit")

    # Never two balancers at once, not even during an update: they may
    # disagree about the ring.
    check(balancer["spec"].get("strategy", {}).get("type") == "Recreate",
          "k8s balancer: strategy must be Recreate (a RollingUpdate runs two HAProxies that may disagree on rooms)")
    pdbs = [d for d in by_kind.get("PodDisruptionBudget", [])
            if selects(d["spec"].get("selector", {}).get("matchLabels"), balancer["spec"]["template"])]
    check(len(pdbs) == 1 and (str(pdbs[0]["spec"].get("minAvailable")) == "1"
                              or str(pdbs[0]["spec"].get("maxUnavailable")) == "0"),
          "k8s balancer: needs one PodDisruptionBudget that lets no drain evict it (minAvailable 1)")
    # Ready only while it has an instance to send players to: the readiness
    # probe asks HAProxy's monitor-uri, failed when no server is up; liveness
    # must not depend on the instances.
    volumes = {v.get("name"): (v.get("configMap") or {}).get("name")
               for v in balancer["spec"]["template"]["spec"].get("volumes", [])}
    check("jumpgate-balancer" in volumes.values(), "k8s balancer: does not mount the generated ConfigMap jumpgate-balancer")
    lb_ports = {p.get("name"): p.get("containerPort") for p in lb.get("ports", [])}
    ready = (lb.get("readinessProbe") or {}).get("httpGet") or {}
    live = (lb.get("livenessProbe") or {}).get("httpGet") or {}
    ready_port = lb_ports.get(ready.get("port"), ready.get("port"))
    monitors = {}
    for header, lines in k8s_routing.items():
        uri = next((l.split()[1] for l in lines if l.startswith("monitor-uri ")), None)
        port = next((l.split(":")[-1] for l in lines if l.startswith("bind ")), None)
        if uri:
            monitors[(uri, str(port))] = lines
    monitor = monitors.get((ready.get("path"), str(ready_port)))
    if check(monitor, f"k8s balancer: readinessProbe {ready.get('path')!r} on port {ready_port} is not a "
                      f"monitor-uri of k8s/haproxy.cfg"):
        check(any(re.fullmatch(r"monitor fail if \{ nbsrv\(jumpgate\) (lt 1|eq 0) \}", l) for l in monitor),
              "k8s/haproxy.cfg: the readiness monitor must fail while backend jumpgate has no server up "
              "(monitor fail if { nbsrv(jumpgate) lt 1 })")
    check(live.get("path") and live.get("path") != ready.get("path"),
          "k8s balancer: liveness must not be the readiness monitor (an instance outage would restart HAProxy)")

# NetworkPolicy: the instances' public port only from the balancer, their
# metrics only from selected monitoring pods, nothing else (the operator API
# stays on loopback).
public_port = int(configmap.get("JUMPGATE_LISTEN", ":8080").rpartition(":")[2] or 8080)
metrics_port = int(configmap.get("JUMPGATE_METRICS_LISTEN", ":9090").rpartition(":")[2] or 9090)
if deployment and balancer:
    template = deployment["spec"]["template"]
    policies = [d for d in by_kind.get("NetworkPolicy", [])
                if selects(d["spec"].get("podSelector", {}).get("matchLabels"), template)
                and "Ingress" in (d["spec"].get("policyTypes") or ["Ingress"])]
    if check(policies, "k8s: no NetworkPolicy restricts who reaches the instances"):
        admitted = {}   # port -> list of peers (None: from anywhere)
        for pol in policies:
            for rule in pol["spec"].get("ingress") or []:
                ports = [p.get("port") for p in rule.get("ports") or []]
                check(ports, f"k8s NetworkPolicy {pol['metadata']['name']}: a rule without ports admits every port")
                for port in ports:
                    admitted.setdefault(port, []).extend(rule.get("from") or [None])
        check(set(admitted) <= {public_port, metrics_port},
              f"k8s NetworkPolicy: admits ports {sorted(set(admitted) - {public_port, metrics_port})} to the instances")
        peers = admitted.get(public_port, [])
        check(peers and all(p and set(p) == {"podSelector"}
                            and selects(p["podSelector"].get("matchLabels"), balancer["spec"]["template"])
                            for p in peers),
              f"k8s NetworkPolicy: port {public_port} must be admitted from the balancer's pods only")
        peers = admitted.get(metrics_port, [])
        check(peers and all(p and (p.get("namespaceSelector") or p.get("podSelector"))
                            and "ipBlock" not in p for p in peers),
              f"k8s NetworkPolicy: port {metrics_port} (/metrics) must be admitted from selected monitoring pods only")
    lb_policies = [d for d in by_kind.get("NetworkPolicy", [])
                   if selects(d["spec"].get("podSelector", {}).get("matchLabels"), balancer["spec"]["template"])]
    for pol in lb_policies:
        check(any(lb_ports.get("http") in [p.get("port") for p in r.get("ports") or []] or not r.get("ports")
                  for r in pol["spec"].get("ingress") or []),
              f"k8s NetworkPolicy {pol['metadata']['name']}: players could not reach the balancer's port")

# The static shards are gone; the server refuses the old setting.
for path in [HERE / "Dockerfile", HERE / "haproxy.cfg", *HERE.rglob("*.y*ml"), *(HERE / "k8s").glob("*.cfg"),
             *(HERE / "k8s").glob("*.env")]:
    check("JUMPGATE_SHARD" not in path.read_text(), f"{path.relative_to(HERE)}: JUMPGATE_SHARD no longer exists")

# Prometheus' scrape configuration (not a Kubernetes object, so not in k8s/).
scrape = (docs.get("prometheus/scrape.yaml") or [{}])[0] or {}
jobs = scrape.get("scrape_configs") or []
check(jobs and all("job_name" in j for j in jobs), "prometheus/scrape.yaml: no scrape_configs with job_name")
check(all(str(j.get("job_name", "")).startswith("jumpgate") for j in jobs),
      "prometheus/scrape.yaml: job names must start with jumpgate (alerts.yaml matches job=~\"jumpgate.*\")")
static = {t.split(":")[0] for j in jobs for sc in j.get("static_configs") or [] for t in sc.get("targets") or []}
dns_names = {n for j in jobs for sc in j.get("dns_sd_configs") or [] for n in sc.get("names") or []}
check("bot-worker" in dns_names, "prometheus/scrape.yaml: the compose bot-worker replicas are not scraped "
                                 "(a dns_sd_configs job naming bot-worker)")
if jumpgates:
    check(static == set(jumpgates), f"prometheus/scrape.yaml: compose targets {sorted(static)} "
                                    f"are not the compose instances {sorted(jumpgates)}")

# --- kubernetes-validate: the rendered objects against the API's schemas -------------
kv = args.kubernetes_validate
validated = "manifests not schema-checked (no --kubernetes-validate)"
if kv:
    if check(shutil.which(kv), f"--kubernetes-validate {kv}: not an executable"):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="jumpgate-k8s-") as out:
            yaml.safe_dump_all(k8s, out, sort_keys=False)
            out.flush()
            for version in K8S_VERSIONS:
                run = subprocess.run([kv, "--strict", "--quiet", "-k", version, out.name],
                                     capture_output=True, text=True)
                errors = [l.replace(out.name, "k8s/ as rendered") for l in (run.stdout + run.stderr).splitlines()
                          if l.strip()]
                check(run.returncode == 0, f"kubernetes-validate {version} failed: " + " / ".join(errors))
        validated = f"{len(k8s)} k8s objects validated against {', '.join(K8S_VERSIONS)}"
elif args.require_tools:
    failures.append("--require-tools: no --kubernetes-validate given")

# --- HAProxy's own parser, where HAProxy is installed (CI installs it) ------------------
haproxy = shutil.which("haproxy")
if args.require_tools and not haproxy:
    failures.append("--require-tools: haproxy is not installed")
for cfg_file in (HERE / "haproxy.cfg", HERE / "k8s" / "haproxy.cfg"):
    if haproxy and cfg_file.exists():
        env = dict(os.environ, JUMPGATE_INSTANCES="jumpgate-instances.default.svc.cluster.local")
        run = subprocess.run([haproxy, "-c", "-f", str(cfg_file)], env=env, capture_output=True, text=True)
        alerts = [l for l in (run.stdout + run.stderr).splitlines() if "ALERT" in l]
        check(run.returncode == 0, f"{cfg_file.relative_to(HERE)}: haproxy -c failed: {' / '.join(alerts)}")

# --- Grafana dashboard ----------------------------------------------------------------
FUNCS_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                  "and", "or", "unless", "offset", "inf", "nan"}


def metric_names(expr):
    """Metric names used in a PromQL expression (selectors), and the labels grouped by."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)         # strings
    grouped = set()
    for m in re.finditer(r"\b(?:by|without)\s*\(([^)]*)\)", e):
        grouped |= {x.strip() for x in m.group(1).split(",") if x.strip()}
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\{[^}]*\}", " ", e)                       # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                      # ranges
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word, rest = m.group(0), e[m.end():].lstrip()
        if rest.startswith("(") or word.lower() in FUNCS_KEYWORDS:
            continue
        names.add(word)
    return names, grouped


def exprs(node):
    if isinstance(node, dict):
        if node.get("type") == "datasource":   # a data-source picker, not a query
            return
        for k, v in node.items():
            if k in ("expr", "definition") and isinstance(v, str):
                yield v
            elif k == "query" and isinstance(v, str):
                yield v
            else:
                yield from exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from exprs(v)


dash_path = HERE / "grafana" / "jumpgate-dashboard.json"
try:
    dash = json.loads(dash_path.read_text())
except (OSError, ValueError) as e:
    dash = None
    failures.append(f"grafana/jumpgate-dashboard.json: {e}")
if dash is not None:
    check(dash.get("title") and isinstance(dash.get("panels"), list) and dash.get("schemaVersion"),
          "dashboard: needs title, panels and schemaVersion")
    ids = [p.get("id") for p in dash["panels"]]
    check(len(ids) == len(set(ids)), "dashboard: panel ids are not unique")
    used = set()
    for expr in exprs(dash):
        if expr.startswith("label_values("):
            expr = expr[len("label_values("):].rsplit(",", 1)[0]
        names, grouped = metric_names(expr)
        for name in names:
            if not check(name.startswith("jumpgate_"), f"dashboard: {name!r} does not start with jumpgate_ in {expr!r}"):
                continue
            base, suffix = name, ""
            for s in ("_bucket", "_sum", "_count"):
                if name.endswith(s) and name[: -len(s)] in METRICS and METRICS[name[: -len(s)]][0] == "histogram":
                    base, suffix = name[: -len(s)], s
            if not check(base in METRICS, f"dashboard: unknown metric {name!r} in {expr!r}"):
                continue
            kind, labels = METRICS[base]
            used.add(base)
            allowed = labels | TARGET_LABELS | ({"le"} if suffix == "_bucket" else set())
            check(grouped <= allowed, f"dashboard: {expr!r} groups by {sorted(grouped - allowed)}, "
                                      f"which {base} does not have")
            if kind == "counter":
                check(re.search(r"\b(rate|irate|increase)\(\s*" + name + r"\b", expr),
                      f"dashboard: counter {name} used without rate()/increase(): {expr!r}")
            if kind == "histogram":
                check(suffix == "_bucket" and "histogram_quantile(" in expr,
                      f"dashboard: histogram {base} must be read with histogram_quantile over _bucket: {expr!r}")
    check(not (set(METRICS) - used), f"dashboard: no panel for {sorted(set(METRICS) - used)}")
    # Every metric the server registers is known here (and so has a panel).
    metrics_rs = ROOT / "server" / "src" / "metrics.rs"
    if metrics_rs.exists():
        registered = {"jumpgate_" + n for n in re.findall(r'\b(?:opts|hist)\(\s*"([a-z0-9_]+)"', metrics_rs.read_text())}
        check(registered and not (registered - set(METRICS)),
              f"check.py: METRICS lacks what server/src/metrics.rs registers: {sorted(registered - set(METRICS))}")
    # Every metric the READMEs name (in backticks) has a panel.
    crates = {"jumpgate_" + m.group(1).replace("-", "_")
              for manifest in ROOT.glob("*/Cargo.toml")
              for m in [re.search(r'^name\s*=\s*"jumpgate-([a-z0-9-]+)"', manifest.read_text(), re.M)] if m}
    for readme in (HERE / "README.md", ROOT / "README.md"):
        if readme.exists():
            named = set(re.findall(r"`(jumpgate_[a-z0-9_]+)(?:\{[^}`]*\})?`", readme.read_text())) - crates
            check(not (named - used), f"dashboard: no panel for {sorted(named - used)}, named in "
                                      f"{readme.relative_to(ROOT)}")
    all_exprs = list(exprs(dash))
    for base, (kind, _) in METRICS.items():
        if kind == "histogram":
            for qv in ("0.5", "0.99"):
                check(any(f"histogram_quantile({qv}," in x and base + "_bucket" in x for x in all_exprs),
                      f"dashboard: no p{int(float(qv) * 100)} for {base}")

# --- Dockerfile ----------------------------------------------------------------------
dockerfile = (HERE / "Dockerfile").read_text() if (HERE / "Dockerfile").exists() else ""
if check(dockerfile, "Dockerfile is missing"):
    check("cargo build --release --locked -p jumpgate-server" in dockerfile,
          "Dockerfile: must run `cargo build --release --locked -p jumpgate-server`")
    froms = re.findall(r"^FROM\s+(\S+)", dockerfile, re.M)
    check(len(froms) >= 2 and froms[-1].startswith("debian:bookworm-slim"),
          "Dockerfile: must be multi-stage ending on debian:bookworm-slim")
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    check(users and users[-1].split(":")[0] not in ("root", "0"), "Dockerfile: the final USER must not be root")
    expose = set(" ".join(re.findall(r"^EXPOSE\s+(.+)$", dockerfile, re.M)).split())
    check({"8080", "9090"} <= expose, "Dockerfile: must EXPOSE 8080 9090")
    check(re.search(r"^HEALTHCHECK .*(\n\s+.*)*?/healthz", dockerfile, re.M), "Dockerfile: HEALTHCHECK must hit /healthz")
    check(re.search(r'^ENTRYPOINT\s+\["jumpgate",\s*"serve"\]', dockerfile, re.M),
          'Dockerfile: ENTRYPOINT must be ["jumpgate", "serve"]')
    check("COPY --from=" in dockerfile, "Dockerfile: runtime stage must copy the binary from the build stage")

# --- alert rules ---------------------------------------------------------------
# Every rule names only metrics the server exports (or `up`), has a summary,
# a description and a runbook_url that leads to a heading of RUNBOOK.md;
# promtool checks the syntax and runs the unit tests when installed.
ALERTS = HERE / "prometheus" / "alerts.yaml"
ALERT_TESTS = HERE / "prometheus" / "alerts.test.yaml"
RUNBOOK = HERE / "RUNBOOK.md"


def heading_anchors(markdown):
    """The anchors GitHub and GitLab give a file's headings: lower case, spaces
    to hyphens, punctuation other than - and _ dropped (fenced code skipped)."""
    anchors, fenced = set(), False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            anchors.add(re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-"))
    return anchors


runbook_anchors = heading_anchors(RUNBOOK.read_text()) if check(RUNBOOK.exists(), "RUNBOOK.md is missing") else set()
alert_docs = load_yaml(ALERTS) if ALERTS.exists() else []
if check(alert_docs and isinstance(alert_docs[0], dict), "prometheus/alerts.yaml: missing or empty"):
    rules = [r for g in alert_docs[0].get("groups", []) for r in g.get("rules", [])]
    check(rules, "prometheus/alerts.yaml: no rules")
    for rule in rules:
        name = rule.get("alert", "?")
        ann = rule.get("annotations", {})
        check(ann.get("summary") and ann.get("description"), f"alerts: {name} lacks a summary or description")
        # Relative to the repository as shipped; an absolute URL once the
        # operator has pointed it at their copy (README, "Alerts").
        url = str(ann.get("runbook_url", ""))
        m = re.fullmatch(r"(?:.*/)?RUNBOOK\.md#([\w-]+)", url)
        check(m and m.group(1) in runbook_anchors,
              f"alerts: {name} runbook_url {url!r} does not lead to a heading of RUNBOOK.md")
        for metric in re.findall(r"\b(jumpgate_[a-z_]+)", rule.get("expr", "")):
            base = re.sub(r"_(bucket|sum|count)$", "", metric)
            check(metric in METRICS or base in METRICS, f"alerts: {name} uses unknown metric {metric}")
    check(any("absent(up{" in str(r.get("expr", "")) for r in rules),
          "alerts: no absent(up{...}) rule: with no target left, no other rule can fire")
promtool = shutil.which("promtool")
if args.require_tools and not promtool:
    failures.append("--require-tools: promtool is not installed (Debian: apt-get install prometheus)")
if promtool and ALERTS.exists():
    run = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True)
    check(run.returncode == 0, f"prometheus/alerts.yaml: promtool check rules failed: {run.stdout}{run.stderr}")
    if check(ALERT_TESTS.exists(), "prometheus/alerts.test.yaml is missing"):
        run = subprocess.run([promtool, "test", "rules", ALERT_TESTS.name], cwd=ALERT_TESTS.parent,
                             capture_output=True, text=True)
        check(run.returncode == 0, f"prometheus/alerts.test.yaml: promtool test rules failed:\n{run.stdout}{run.stderr}")

if failures:
    print("deploy/check.py: FAILED", file=sys.stderr)
    for f in failures:
        print("  - " + f, file=sys.stderr)
    sys.exit(1)
parsed = "checked by haproxy -c" if haproxy else "haproxy not installed, not parsed"
rules_checked = ("alert rules checked and unit-tested by promtool" if promtool
                 else "alert rules (promtool not installed)")
print(f"deploy/check.py: ok ({len(docs)} YAML files, dashboard, Dockerfile, both haproxy.cfg, {parsed}, "
      f"{rules_checked}, {validated})")
