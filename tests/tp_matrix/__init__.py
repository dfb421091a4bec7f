"""Real transformers native-TP matrix: tiny models, torchrun worker, runner (see run.py)."""
