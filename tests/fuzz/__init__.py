"""Coverage-guided fuzzing of every reader of untrusted bytes: targets (`targets.py`), seed corpus
(`corpus.py`), the atheris runner (`python -m tests.fuzz`) and a pytest smoke run without atheris."""
