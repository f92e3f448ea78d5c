#!/usr/bin/env python3
"""Sanity checks for deploy/: parses every YAML file and the Grafana dashboard
and asserts the facts deploy/README.md promises.

    python3 deploy/check.py          (needs python3-yaml: apt-get install -y python3-yaml)

Exits 0 when everything holds, 1 with one line per failure otherwise.
"""
import json
import pathlib
import re
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
    "jumpgate_stake_points_total": ("counter", {"kind"}),
    "jumpgate_redis_op_seconds": ("histogram", {"op"}),
    "jumpgate_redis_errors_total": ("counter", {"op"}),
    "jumpgate_bot_think_seconds": ("histogram", {"level"}),
    "jumpgate_move_handling_seconds": ("histogram", set()),
    "jumpgate_slow_consumers_dropped_total": ("counter", set()),
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


# --- compose ------------------------------------------------------------------
compose = (docs.get("compose.yaml") or [None])[0]
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
    check(len(jumpgates) == 2, f"compose.yaml: expected two jumpgate services, found {sorted(jumpgates)}")
    lbs = {n: s for n, s in services.items() if re.match(r"(haproxy|nginx)", str(s.get("image", "")))}
    check(len(lbs) == 1, "compose.yaml: expected one load balancer (haproxy or nginx)")
    secrets = {env_of(s).get("JUMPGATE_TOKEN_SECRET") for s in jumpgates.values()}
    check(len(secrets) == 1 and None not in secrets,
          "compose.yaml: jumpgate instances must share one JUMPGATE_TOKEN_SECRET")
    for name, svc in jumpgates.items():
        env = env_of(svc)
        check(str(env.get("JUMPGATE_LISTEN", "")).startswith("0.0.0.0:"),
              f"compose.yaml: {name} does not listen on 0.0.0.0")
        check(env.get("JUMPGATE_REDIS_URL", "").startswith("redis://redis:"),
              f"compose.yaml: {name} does not use the redis service")
        grace_s = int(env.get("JUMPGATE_SHUTDOWN_GRACE_MS", 10000)) / 1000
        check(seconds(svc.get("stop_grace_period", "10s")) > grace_s,
              f"compose.yaml: {name} stop_grace_period must exceed the shutdown grace ({grace_s}s)")
    # HAProxy config: mounted, and its servers are the compose services.
    cfg_path = HERE / "haproxy.cfg"
    if check(cfg_path.exists(), "haproxy.cfg is missing"):
        cfg = cfg_path.read_text()
        for (name, lb) in lbs.items():
            check(any("haproxy.cfg:" in str(v) for v in lb.get("volumes") or []),
                  f"compose.yaml: {name} does not mount haproxy.cfg")
        servers = re.findall(r"^\s*server\s+(\S+)\s+(\S+?):(\d+)", cfg, re.M)
        check({host for _, host, _ in servers} == set(jumpgates),
              f"haproxy.cfg: servers {servers} do not match compose services {sorted(jumpgates)}")
        check("url_param(room)" in cfg, "haproxy.cfg: does not route /ws by ?room=")
        check("path_beg /r/" in cfg and "field(3,/)" in cfg, "haproxy.cfg: does not route /r/{CODE} by code")
        check("regsub(^S,)" in cfg, "haproxy.cfg: does not route solo ids (S + code) by their code")
        check(f"crc32,mod({len(servers)})" in cfg,
              f"haproxy.cfg: shard must be crc32 mod {len(servers)} (number of servers)")
        check(re.search(r"^\s*balance\s+roundrobin", cfg, re.M), "haproxy.cfg: no round-robin fallback")
        check("/readyz" in cfg, "haproxy.cfg: health check does not use /readyz")

# --- Kubernetes -----------------------------------------------------------------
k8s = [d for name, ds in docs.items() if name.startswith("k8s/") for d in ds
       if isinstance(d, dict) and "kind" in d and "apiVersion" in d]
by_kind = {}
for d in k8s:
    by_kind.setdefault(d["kind"], []).append(d)

configmap = (by_kind.get("ConfigMap") or [{}])[0].get("data") or {}
check(configmap, "k8s: no ConfigMap with data")
check("JUMPGATE_TOKEN_SECRET" not in configmap, "k8s: the token secret must not be in the ConfigMap")
shutdown_ms = int(configmap.get("JUMPGATE_SHUTDOWN_GRACE_MS", 10000))
check(configmap.get("JUMPGATE_LISTEN", "").startswith("0.0.0.0:"), "k8s ConfigMap: JUMPGATE_LISTEN must be 0.0.0.0:...")

secret = (by_kind.get("Secret") or [{}])[0]
check("JUMPGATE_TOKEN_SECRET" in (secret.get("stringData") or {}), "k8s: Secret has no stringData JUMPGATE_TOKEN_SECRET")

deployment = (by_kind.get("Deployment") or [None])[0]
if check(deployment, "k8s: no Deployment"):
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    check(spec.get("replicas") == 2, "k8s Deployment: replicas must be 2")
    container = pod["containers"][0]
    live = container.get("livenessProbe", {}).get("httpGet", {}).get("path")
    ready = container.get("readinessProbe", {}).get("httpGet", {}).get("path")
    check(live == "/healthz", f"k8s Deployment: liveness probe path is {live!r}, want /healthz")
    check(ready == "/readyz", f"k8s Deployment: readiness probe path is {ready!r}, want /readyz")
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
    check({(by_kind.get("ConfigMap") or [{}])[0].get("metadata", {}).get("name"),
           secret.get("metadata", {}).get("name")} <= env_from,
          "k8s Deployment: envFrom does not reference the ConfigMap and Secret")
check(by_kind.get("Service"), "k8s: no Service")

kust = (docs.get("k8s/kustomization.yaml") or [{}])[0] or {}
listed = set(kust.get("resources") or [])
for name, ds in docs.items():
    if name.startswith("k8s/") and any(isinstance(d, dict) and "kind" in d and "apiVersion" in d
                                       and d["kind"] != "Kustomization" for d in ds):
        check(name[len("k8s/"):] in listed, f"k8s/kustomization.yaml does not list {name}")

scrape = (docs.get("k8s/prometheus-scrape.yaml") or [{}])[0] or {}
jobs = scrape.get("scrape_configs") or []
check(jobs and all("job_name" in j for j in jobs), "k8s/prometheus-scrape.yaml: no scrape_configs with job_name")

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

if failures:
    print("deploy/check.py: FAILED", file=sys.stderr)
    for f in failures:
        print("  - " + f, file=sys.stderr)
    sys.exit(1)
print(f"deploy/check.py: ok ({len(docs)} YAML files, dashboard, Dockerfile, haproxy.cfg)")
