#!/bin/sh
# Makes corpus/builtin/bible-en-es.tsv, the translation chapter's corpus:
# English–Spanish verse pairs from two public-domain Bibles that Debian
# packages as SWORD modules (docs/translation.md tells the whole story).
#
#   apt-get install sword-text-web sword-text-sparv libsword-utils
#   sh corpus/builtin/mkbible.sh            # from the repository root
#
# mod2imp dumps each module as "$$$Book C:V" keys and OSIS-marked verses;
# corpus/builtin/mkbible strips the markup (tested on real verses in
# corpus/builtin/mkbible/testdata), pairs the verses both modules have and
# keeps those of at most MAX_WORDS English words (gptg's word tokens,
# punctuation included). The same packages give the same file.
set -eu
MAX_WORDS=${MAX_WORDS:-24}
cd "$(dirname "$0")/../.."
command -v mod2imp >/dev/null || { echo "mkbible.sh: mod2imp is missing (apt-get install libsword-utils)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mod2imp engWEB2015eb >"$tmp/en.imp"
mod2imp spaRV1909eb >"$tmp/es.imp"
for f in en es; do
	[ -s "$tmp/$f.imp" ] || { echo "mkbible.sh: mod2imp gave nothing (apt-get install sword-text-web sword-text-sparv)" >&2; exit 1; }
done
go run ./corpus/builtin/mkbible -en "$tmp/en.imp" -es "$tmp/es.imp" -max-words "$MAX_WORDS" -out corpus/builtin/bible-en-es.tsv
dpkg-query -W -f '${Package} ${Version}\n' sword-text-web sword-text-sparv libsword-utils 2>/dev/null || true
sha256sum corpus/builtin/bible-en-es.tsv
