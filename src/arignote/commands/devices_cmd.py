"""``arignote devices``: the devices this machine has and what the ``device`` flag resolves to.

Example::

    $ arignote devices
    device  name      pci bus  memory                           capability
    cpu     AMD EPYC  -        24105 MiB, 22730 MiB free (RAM)  2 threads
    no CUDA GPU: this torch build (2.13.0+cpu) has no CUDA support
    device=auto (default) -> cpu
"""

from __future__ import annotations

import json

from arignote import config, devices
from arignote.errors import DeviceError

HELP = "list the CPU and GPUs (name, PCI bus, memory, capability) and what the device flag selects"

MiB = 1 << 20


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--kind", choices=("cpu", "cuda"), help="only this kind of device")


def rows(devices) -> list[list[str]]:
    """Table rows (header first) for a list of :class:`~arignote.devices.Device` (pure)."""
    out = [["device", "name", "pci bus", "memory", "capability"]]
    for d in devices:
        memory = f"{d.total_memory // MiB} MiB, {d.free_memory // MiB} MiB free"
        if d.is_cuda:
            cap = ".".join(map(str, d.capability)) if d.capability else "n/a"
            out.append([str(d), d.name, d.pci_bus_id or "n/a", memory, cap])
        else:
            ram = f"{memory} (RAM)" if d.total_memory else "n/a"
            out.append([str(d), d.name, "-", ram, f"{d.info.threads} threads" if d.info else "-"])
    return out


def render(table: list[list[str]]) -> str:
    """Left-aligned plain-text columns (pure, so tests compare it exactly)."""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table)


def _selection() -> dict:
    """What the device flag resolves to, or why it cannot."""
    spec, src = config.get("device"), config.source("device")
    try:
        from arignote.runtime import setup  # torch loads with the device query, not with --help
        chosen = [str(d) for d in setup.configured_devices(lease=False)]  # look, do not lease free:N GPUs
        return {"spec": spec, "source": src, "devices": chosen, "error": None}
    except DeviceError as exc:
        return {"spec": spec, "source": src, "devices": [], "error": str(exc)}


def run(args) -> int:
    inv = devices.current_inventory()
    listed = devices.list_devices(args.kind, inventory=inv)
    chosen = _selection()
    if args.json:
        print(json.dumps({"devices": [d.as_dict() for d in listed], "cuda_reason": inv.cuda_reason,
                          "device_flag": chosen}, indent=2))
        return 0
    print(render(rows(listed)))
    if not inv.gpus:
        print(f"no CUDA GPU: {inv.cuda_reason}")
    if chosen["error"] is None:
        print(f"device={chosen['spec']} ({chosen['source']}) -> {', '.join(chosen['devices'])}")
    else:
        print(f"the device flag cannot be used here: {chosen['error']}")
    return 0
