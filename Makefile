# Two commands: `make test` and `make train`. Both set up a local .venv first (idempotent).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup sysdeps test clean-venv

setup: $(STAMP)

# open3d needs libusb-1.0 at import time; it is the one Debian package we need.
sysdeps:
	@if ldconfig -p 2>/dev/null | grep -q 'libusb-1.0.so.0'; then \
	  true; \
	elif [ "$$(id -u)" = "0" ]; then \
	  echo ">> installing libusb-1.0-0 (needed by open3d)"; \
	  (apt-get install -y -qq libusb-1.0-0 >/dev/null 2>&1 || \
	   (apt-get update -qq && apt-get install -y -qq libusb-1.0-0)); \
	else \
	  echo "open3d needs the Debian package libusb-1.0-0. Run:  sudo apt-get install -y libusb-1.0-0"; \
	  exit 1; \
	fi

# Re-runs only when pyproject.toml changes; a second `make test` skips this in well under a second.
$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory sysdeps
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.14.1 torchvision==0.29.1
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

test: setup
	$(BIN)/python -m pytest -q tests

clean-venv:
	rm -rf $(VENV)
