"""The scoring loop: eval sets in, judges and metrics per item, ``items.jsonl`` and ``summary.json`` out."""
