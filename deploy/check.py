#!/usr/bin/env python3
"""Sanity checks for deploy/: parses every YAML file, the Grafana dashboard and
both HAProxy configurations (with `haproxy -c` too when HAProxy is installed),
and asserts the facts deploy/README.md promises.

    python3 deploy/check.py          (needs python3-yaml: apt-get install -y python3-yaml)

Exits 0 when everything holds, 1 with one line per failure otherwise.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    sys.exit("check.py: the yaml module is missing; apt-get install -y python3-yaml")

HERE = pathlib.Path(__file__).resolve().parent
failures = []

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
    "jumpgate_move_handling_seconds": ("histogram", set()),
    "jumpgate_room_mailbox_wait_seconds": ("histogram", set()),
    "jumpgate_rooms_unloaded_total": ("counter", set()),
    "jumpgate_rooms_woken_total": ("counter", set()),
    "jumpgate_correspondence_expired_total": ("counter", set()),
    "jumpgate_slow_consumers_dropped_total": ("counter", set()),
    "jumpgate_room_handovers_total": ("counter", set()),
    "jumpgate_room_takeovers_total": ("counter", set()),
    "jumpgate_writes_fenced_total": ("counter", set()),
    "jumpgate_writes_expired_total": ("counter", {"write"}),
    "jumpgate_edge_refusals_total": ("counter", {"reason"}),
    "jumpgate_messages_throttled_total": ("counter", set()),
    "jumpgate_http_connections_open": ("gauge", set()),
    "jumpgate_solo_games_live": ("gauge", set()),
    "jumpgate_rooms_awaiting_store": ("gauge", set()),
    "jumpgate_resume_seconds": ("gauge", set()),
    "jumpgate_resume_rooms_left": ("gauge", set()),
    "jumpgate_resume_rooms_total": ("counter", {"outcome"}),
    "jumpgate_build_info": ("gauge", {"version"}),
    "jumpgate_rooms_unresumable": ("gauge", set()),
}
TARGET_LABELS = {"instance", "job", "namespace", "pod"}


def check(cond, message):
    if not cond:
        failures.append(message)
    return cond


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


# --- compose ------------------------------------------------------------------
compose = (docs.get("compose.yaml") or [None])[0]
jumpgates, compose_routing = {}, None
cfg_path = HERE / "haproxy.cfg"
if check(isinstance(compose, dict), "compose.yaml: missing or empty"):
    services = compose.get("services") or {}
    redis = services.get("redis")
    if check(redis is not None, "compose.yaml: no redis service"):
        check(str(redis.get("image", "")).startswith("redis:7"), "compose.yaml: redis image is not redis:7")
        cmd = redis.get("command")
        cmd = " ".join(cmd) if isinstance(cmd, list) else str(cmd)
        check("--appendonly yes" in cmd, "compose.yaml: redis is not started with --appendonly yes")
        check("--appendfsync everysec" in cmd, "compose.yaml: redis is not started with --appendfsync everysec")
        check(any(str(v).endswith(":/data") for v in redis.get("volumes") or []),
              "compose.yaml: redis /data is not on a volume")
    jumpgates = {n: s for n, s in services.items()
                 if "JUMPGATE_REDIS_URL" in env_of(s)}
    check(len(jumpgates) >= 3, f"compose.yaml: expected at least three jumpgate services, found {sorted(jumpgates)}")
    lbs = {n: s for n, s in services.items() if re.match(r"(haproxy|nginx)", str(s.get("image", "")))}
    check(len(lbs) == 1, "compose.yaml: expected one load balancer (haproxy or nginx)")
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
        servers = re.findall(r"^\s*server\s+(\S+)\s+(\S+?):(\d+)", cfg, re.M)
        check({host for _, host, _ in servers} == set(jumpgates),
              f"haproxy.cfg: servers {servers} do not match compose services {sorted(jumpgates)}")
        ids = re.findall(r"^\s*server\s.*\sid\s+(\d+)", cfg, re.M)
        check(len(ids) == len(servers) == len(set(ids)),
              "haproxy.cfg: every server needs its own fixed 'id' (the ring is built from the ids)")

# --- Kubernetes -----------------------------------------------------------------
k8s = [d for name, ds in docs.items() if name.startswith("k8s/") for d in ds
       if isinstance(d, dict) and "kind" in d and "apiVersion" in d]
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

secret = (by_kind.get("Secret") or [{}])[0]
check("JUMPGATE_TOKEN_SECRET" in (secret.get("stringData") or {}), "k8s: Secret has no stringData JUMPGATE_TOKEN_SECRET")

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
    env_from = {next(iter(v.values()))["name"] for v in container.get("envFrom", [])}
    check({"jumpgate", secret.get("metadata", {}).get("name")} <= env_from,
          "k8s Deployment: envFrom does not reference the ConfigMap and Secret")

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

# The static shards are gone; the server refuses the old setting.
for path in [HERE / "Dockerfile", HERE / "haproxy.cfg", *HERE.rglob("*.y*ml"), *(HERE / "k8s").glob("*.cfg")]:
    check("JUMPGATE_SHARD" not in path.read_text(), f"{path.relative_to(HERE)}: JUMPGATE_SHARD no longer exists")

kust = (docs.get("k8s/kustomization.yaml") or [{}])[0] or {}
listed = set(kust.get("resources") or [])
for name, ds in docs.items():
    if name.startswith("k8s/") and any(isinstance(d, dict) and "kind" in d and "apiVersion" in d
                                       and d["kind"] != "Kustomization" for d in ds):
        check(name[len("k8s/"):] in listed, f"k8s/kustomization.yaml does not list {name}")
generated = {f for g in kust.get("configMapGenerator") or [] for f in g.get("files") or []}
check("haproxy.cfg" in generated, "k8s/kustomization.yaml does not generate the balancer's ConfigMap from haproxy.cfg")

scrape = (docs.get("k8s/prometheus-scrape.yaml") or [{}])[0] or {}
jobs = scrape.get("scrape_configs") or []
check(jobs and all("job_name" in j for j in jobs), "k8s/prometheus-scrape.yaml: no scrape_configs with job_name")
static = {t.split(":")[0] for j in jobs for sc in j.get("static_configs") or [] for t in sc.get("targets") or []}
if jumpgates:
    check(static == set(jumpgates), f"k8s/prometheus-scrape.yaml: compose targets {sorted(static)} "
                                    f"are not the compose instances {sorted(jumpgates)}")

# --- HAProxy's own parser, where HAProxy is installed (CI installs it) ------------------
haproxy = shutil.which("haproxy")
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
# Every rule names only metrics the server exports (or `up`), and has a
# summary and a description; promtool checks the syntax when installed.
ALERTS = HERE / "prometheus" / "alerts.yaml"
alert_docs = load_yaml(ALERTS) if ALERTS.exists() else []
if check(alert_docs and isinstance(alert_docs[0], dict), "prometheus/alerts.yaml: missing or empty"):
    rules = [r for g in alert_docs[0].get("groups", []) for r in g.get("rules", [])]
    check(rules, "prometheus/alerts.yaml: no rules")
    for rule in rules:
        name = rule.get("alert", "?")
        ann = rule.get("annotations", {})
        check(ann.get("summary") and ann.get("description"), f"alerts: {name} lacks a summary or description")
        for metric in re.findall(r"\b(jumpgate_[a-z_]+)", rule.get("expr", "")):
            base = re.sub(r"_(bucket|sum|count)$", "", metric)
            check(metric in METRICS or base in METRICS, f"alerts: {name} uses unknown metric {metric}")
promtool = shutil.which("promtool")
if promtool and ALERTS.exists():
    run = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True)
    check(run.returncode == 0, f"prometheus/alerts.yaml: promtool check rules failed: {run.stdout}{run.stderr}")

if failures:
    print("deploy/check.py: FAILED", file=sys.stderr)
    for f in failures:
        print("  - " + f, file=sys.stderr)
    sys.exit(1)
parsed = "checked by haproxy -c" if haproxy else "haproxy not installed, not parsed"
rules_checked = "alert rules checked by promtool" if promtool else "alert rules (promtool not installed)"
print(f"deploy/check.py: ok ({len(docs)} YAML files, dashboard, Dockerfile, both haproxy.cfg, {parsed}, {rules_checked})")
