"""Sizes and fractions as people write them: "2G", "512MiB", "1.5 GB", 1 << 30;
"20%", 0.2. Powers of 1024 for every unit, as cudafrag's own limits read them."""

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value):
    """Bytes from an int or a string such as "2G", "512 MiB", "1.5GB"."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative: {value}")
        return value
    text = str(value).strip().lower().replace(" ", "")
    for suffix in ("ib", "b"):
        if len(text) > 1 and text.endswith(suffix) and text[-len(suffix) - 1].isalpha():
            text = text[: -len(suffix)]
            break
    number = text.rstrip("kmgtb")
    unit = text[len(number):]
    if unit not in _UNITS:
        raise ValueError(f"not a size: {value!r} (write e.g. 2G, 512MiB or 1048576)")
    try:
        amount = float(number)
    except ValueError:
        raise ValueError(f"not a size: {value!r} (write e.g. 2G, 512MiB or 1048576)") from None
    if amount < 0:
        raise ValueError(f"a size cannot be negative: {value!r}")
    return int(amount * _UNITS[unit])


def parse_fraction(value):
    """A fraction from 0.25 or "25%"."""
    text = str(value).strip()
    try:
        f = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"not a fraction: {value!r} (write e.g. 0.2 or 20%)") from None
    if not 0 <= f <= 1:
        raise ValueError(f"a fraction is between 0 and 1 (0% and 100%): {value!r}")
    return f


def format_size(n):
    """1536 -> '1.5 KiB'."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
