#!/usr/bin/env bash
# Installs the Debian packages the speech engines run: ffmpeg (probe and decode any container),
# sox, espeak-ng (speech synthesis), festival with the US English HTS voice festvox-us-slt-hts
# (tts-local's `en-us-slt`; docs/speech-engines.md says why not festival's Indic voices), pocketsphinx with its US English model (the offline
# recogniser behind `stt-local`), irstlm (builds its language models for a conversation: an intent
# pack's sentences, src/speech/language-models.ts), util-linux (setpriv: every engine dies with the gateway; Essential,
# so already there on Debian). With --test, also the recorded speech the tests use
# (pocketsphinx-testdata: LibriVox clips with transcripts; codec2-examples: 8 kHz speech) and
# chromium, the browser the dashboard tests drive through playwright-core (nothing downloads a browser).
# Idempotent: when every binary and data file is already present, apt is not called at all.
# Uses sudo only when not run as root.
set -euo pipefail

with_test=0
for arg in "$@"; do
  case "$arg" in
    --test) with_test=1 ;;
    -h|--help) echo "usage: $0 [--test]"; exit 0 ;;
    *) echo "unknown argument: $arg (usage: $0 [--test])" >&2; exit 2 ;;
  esac
done

packages=(ffmpeg sox espeak-ng festival festvox-us-slt-hts pocketsphinx pocketsphinx-en-us irstlm util-linux)
# What each package leaves behind, checked before calling apt.
needed=(/usr/bin/ffmpeg /usr/bin/ffprobe /usr/bin/sox /usr/bin/espeak-ng /usr/bin/setpriv
        /usr/bin/festival /usr/share/festival/voices/us/cmu_us_slt_arctic_hts/festvox/cmu_us_slt_arctic_hts.scm
        /usr/bin/pocketsphinx_continuous /usr/share/pocketsphinx/model/en-us/en-us.lm.bin /usr/lib/irstlm/bin/tlm)
if [ "$with_test" = 1 ]; then
  packages+=(pocketsphinx-testdata codec2-examples chromium)
  needed+=(/usr/share/pocketsphinx/test/data/librivox/transcription /usr/share/codec2/raw/hts1a.raw /usr/bin/chromium)
fi

missing=()
for path in "${needed[@]}"; do
  [ -e "$path" ] || missing+=("$path")
done
if [ "${#missing[@]}" = 0 ]; then
  echo "debian packages: already installed (${packages[*]})"
  exit 0
fi
echo "debian packages: missing ${missing[*]}; installing ${packages[*]}"

sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "not root and no sudo: install ${packages[*]} by hand" >&2; exit 1; }
  sudo=(sudo)
fi
"${sudo[@]}" apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${packages[@]}"
