"""``arignote doctor``: can this machine train on the requested device, and if not, what to fix.

Checks torch's version and build, whether CUDA is usable (or why not), the NVIDIA driver (read from
/proc or NVML, without torch), cuDNN and NCCL versions, ``CUDA_VISIBLE_DEVICES`` and
``CUDA_DEVICE_ORDER``, and resolves the device spec. Exit 0 when healthy for the requested device,
1 otherwise, 2 for a malformed spec. The checks are a pure function of :class:`Facts`, so tests
cover GPU boxes on any machine.

Example::

    $ arignote doctor --device cuda
    [fail] CUDA: not usable: this torch build (2.13.0+cpu) has no CUDA support
           fix: ...
    NOT healthy for device=cuda
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from arignote import config
from arignote.devices import nvml
from arignote.devices.identity import parse_visible_devices
from arignote.devices.spec import DeviceError, parse_spec, resolve

HELP = "diagnose torch, CUDA, driver, cuDNN, NCCL, CUDA_VISIBLE_DEVICES for a device spec (exit 1: unhealthy)"
TORCH_CUDA_INDEX = "pip install torch --index-url https://download.pytorch.org/whl/cu128"


@dataclass(frozen=True)
class Finding:
    """One check: level ok / info / warn / fail, a topic, what was found, and the fix when not ok."""

    level: str
    topic: str
    text: str
    fix: str = ""


@dataclass(frozen=True)
class Facts:
    """What doctor looks at, gathered once (:func:`gather`) or written by hand in tests."""

    torch_version: str
    cuda_build: str | None
    cuda_reason: str | None
    gpu_names: tuple[str, ...] = ()
    driver_version: str | None = None
    nvml_gpu_count: int | None = None
    cudnn: int | None = None
    nccl: str | None = None
    visible_devices: str | None = None
    device_order: str | None = None
    order_set_too_late: bool = False
    extra: dict = field(default_factory=dict)


def add_arguments(parser) -> None:
    parser.add_argument("--device", metavar="SPEC", help="device spec to check (default: the device flag)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def driver_version() -> tuple[str | None, int | None]:
    """(NVIDIA driver version, GPUs NVML sees), without torch: /proc first, then NVML."""
    version = None
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as fh:
            words = fh.readline().split()
        version = next((w for w in words if w[:1].isdigit() and "." in w), None)
    except OSError:
        pass
    try:
        pynvml = nvml.session()
    except nvml.NVMLUnavailable:
        return version, None
    try:
        raw = pynvml.nvmlSystemGetDriverVersion()
        version = raw.decode() if isinstance(raw, bytes) else raw
        return version, int(pynvml.nvmlDeviceGetCount())
    except pynvml.NVMLError:
        return version, None


def gather() -> Facts:
    """Read the live machine (imports torch; the driver part does not need it)."""
    driver, nvml_count = driver_version()
    import torch  # doctor reads the driver first: that part must work when torch cannot load

    from arignote.devices import cuda, current_inventory  # import torch, as above

    inv = current_inventory()
    order = config.environ("CUDA_DEVICE_ORDER") if cuda.ORDER_WAS_SET_BY_USER else None
    return Facts(torch_version=torch.__version__, cuda_build=cuda.cuda_version(), cuda_reason=inv.cuda_reason,
                 gpu_names=tuple(g.name for g in inv.gpus), driver_version=driver, nvml_gpu_count=nvml_count,
                 cudnn=cuda.cudnn_version(), nccl=cuda.nccl_version(),
                 visible_devices=config.environ("CUDA_VISIBLE_DEVICES"), device_order=order,
                 order_set_too_late=cuda.ORDER_SET_TOO_LATE)


def check_visible_devices(value: str | None, gpu_count: int | None, needs_gpu: bool) -> list[Finding]:
    """Sanity of ``CUDA_VISIBLE_DEVICES`` (pure): hidden GPUs, junk entries, duplicates, bad indices."""
    topic = "CUDA_VISIBLE_DEVICES"
    if value is None:
        return [Finding("ok", topic, "unset: every GPU is visible")]
    if value.strip() in ("", "-1"):
        return [Finding("fail" if needs_gpu else "info", topic, f"{value!r} hides every GPU",
                        "unset CUDA_VISIBLE_DEVICES (or list GPUs, e.g. 0,1) to use GPUs")]
    out = []
    entries = [e.strip() for e in value.split(",")]
    seen: set[str] = set()
    for e in entries:
        if not parse_visible_devices(e):  # CUDA's grammar (devices/identity.py): not an entry it reads
            out.append(Finding("warn", topic, f"entry {e!r} of {value!r} is neither an index nor a GPU-/MIG- "
                               "UUID; CUDA ignores it and every entry after it",
                               "list indices like 0,1 or UUIDs"))
            break
        if e in seen:
            out.append(Finding("warn", topic, f"{e} is listed twice in {value!r}", "list each GPU once"))
        seen.add(e)
        if e.isdigit() and gpu_count is not None and int(e) >= gpu_count:
            out.append(Finding("warn", topic, f"{value!r} names GPU {e} but the driver sees {gpu_count} "
                               f"(0..{gpu_count - 1}); CUDA drops it and everything after it",
                               "use indices as `nvidia-smi -L` shows them"))
    return out or [Finding("ok", topic, f"{value!r}: these GPUs are visible, renumbered from 0")]


def diagnose(facts: Facts, spec: str, devices: list[str] | None, error: str | None) -> list[Finding]:
    """Every finding for ``spec`` (pure); ``devices`` is what it resolved to, or ``error`` why not."""
    needs_gpu = parse_spec(spec).kind in ("cuda", "all", "free")
    bad = "fail" if needs_gpu else "info"
    out: list[Finding] = []
    build = f"CUDA {facts.cuda_build} build" if facts.cuda_build else "CPU build"
    if facts.cuda_build is None and facts.driver_version:
        out.append(Finding("fail" if needs_gpu else "warn", "torch",
                           f"torch {facts.torch_version} ({build}) but an NVIDIA driver "
                           f"{facts.driver_version} is present", f"install a CUDA build: {TORCH_CUDA_INDEX}"))
    else:
        out.append(Finding("ok", "torch", f"torch {facts.torch_version} ({build})"))
    if facts.driver_version:
        gpus = f", {facts.nvml_gpu_count} GPU(s) in NVML" if facts.nvml_gpu_count is not None else ""
        out.append(Finding("ok", "driver", f"NVIDIA driver {facts.driver_version}{gpus}"))
    else:
        out.append(Finding(bad, "driver", "no NVIDIA driver (no /proc/driver/nvidia/version, no NVML)",
                           "install the NVIDIA driver; `nvidia-smi` must list the GPUs" if needs_gpu else ""))
    if facts.gpu_names:
        names = ", ".join(facts.gpu_names)
        out.append(Finding("ok", "CUDA", f"usable: {len(facts.gpu_names)} GPU(s): {names}"))
    else:
        fix = "use device=cpu or device=auto, or run on a machine with an NVIDIA GPU"
        if facts.cuda_build is None and facts.driver_version:
            fix = f"install a CUDA build: {TORCH_CUDA_INDEX}"
        out.append(Finding(bad, "CUDA", f"not usable: {facts.cuda_reason}", fix if needs_gpu else ""))
    if facts.cuda_build:
        out.append(Finding("ok", "cuDNN", f"version {facts.cudnn}") if facts.cudnn else
                   Finding("warn", "cuDNN", "not available: convolutions run without cuDNN (slower)",
                           "install a torch build that bundles cuDNN"))
        out.append(Finding("ok", "NCCL", f"version {facts.nccl}") if facts.nccl else
                   Finding("warn", "NCCL", "not available: multi-GPU data parallel cannot use NCCL",
                           "install a Linux CUDA build of torch (it bundles NCCL)"))
    else:
        out.append(Finding("info", "cuDNN/NCCL", "not in a CPU build (GPU-only libraries)"))
    out.extend(check_visible_devices(facts.visible_devices, facts.nvml_gpu_count, needs_gpu))
    if facts.device_order not in (None, "PCI_BUS_ID"):
        out.append(Finding("warn", "CUDA_DEVICE_ORDER", f"{facts.device_order}: GPU numbers differ from "
                           "nvidia-smi's",
                           "unset CUDA_DEVICE_ORDER (arignote then uses PCI_BUS_ID)"))
    if facts.order_set_too_late:
        out.append(Finding("warn", "CUDA_DEVICE_ORDER", "CUDA was initialised before arignote could set "
                           "PCI_BUS_ID; GPU numbers may differ from nvidia-smi",
                           "import arignote before using CUDA"))
    if error is None:
        out.append(Finding("ok", "device", f"device={spec} -> {', '.join(devices or [])}"))
    else:
        out.append(Finding("fail", "device", error))
    return out


def render(findings: list[Finding], spec: str) -> str:
    """Human-readable report (pure)."""
    lines = []
    for f in findings:
        lines.append(f"[{f.level:^4}] {f.topic}: {f.text}")
        if f.fix:
            lines.append(f"       fix: {f.fix}")
    healthy = not any(f.level == "fail" for f in findings)
    lines.append(f"healthy for device={spec}" if healthy else f"NOT healthy for device={spec}")
    return "\n".join(lines)


def run(args) -> int:
    from arignote.devices import current_inventory  # imports torch: kept off `arignote --help`

    spec = args.device if args.device is not None else config.get("device")
    parse_spec(spec)  # malformed: DeviceError, exit 2 through the CLI
    facts = gather()
    try:
        devices, error = [str(d) for d in resolve(spec, current_inventory())], None
    except DeviceError as exc:
        devices, error = None, str(exc)
    findings = diagnose(facts, spec, devices, error)
    healthy = not any(f.level == "fail" for f in findings)
    if args.json:
        print(json.dumps({"device": spec, "healthy": healthy, "facts": asdict(facts),
                          "findings": [asdict(f) for f in findings]}, indent=2))
    else:
        print(render(findings, spec))
    return 0 if healthy else 1
