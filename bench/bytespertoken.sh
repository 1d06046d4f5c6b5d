#!/usr/bin/env bash
# bench/bytespertoken.sh: how long a token is, for each tokenizer on each
# built-in corpus (docs/tokenization.md, "Bytes per token, and the loss
# per character").
#
#   bench/bytespertoken.sh
#
# A char, word or learned-BPE vocabulary is a run's own: each is made by
# a one-step training on the corpus as a text (split 0.9: a BPE learns its
# merges on the first 90 %), then `gptg tokens RUN --file` counts the
# whole text's tokens; GPT-2's is `gptg tokens --tokenizer gpt2`. A minute
# or two of one core. OUT (default a temporary folder) keeps the runs.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	out=$(cd "$OUT" && pwd)
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
go build -o "$out/gptg" ./cmd/gptg
gptg=$out/gptg

cat >"$out/base.toml" <<'EOF'
[data]
split = 0.9
[model]
context = 16
embedding = 16
blocks = 1
heads = 1
[train]
batch = 4
max_steps = 1
eval_batches = 1
EOF

# perToken RUN_OR_FLAG FILE: "bytes/token tokens" of FILE's whole text.
perToken() {
	"$gptg" tokens "$@" | tail -1 | awk '{ printf "%s %s\n", $(NF-6), $1 }'
}

printf '| corpus | bytes | characters | char | word | BPE 512 | BPE 2,048 | GPT-2 |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for corpus in tinyshakespeare bible-en-es toy; do
	text=$out/$corpus.txt
	"$gptg" data export "$corpus" --out "$text" --force >/dev/null
	row="| $corpus | $(wc -c <"$text") | $(wc -m <"$text")"
	for kind in char word bpe-512 bpe-2048; do
		tok=${kind%%-*} size=0
		[ "$kind" != "$tok" ] && size=${kind#*-}
		run=$out/runs/$corpus-$kind
		if [ ! -f "$run/model.safetensors" ]; then
			"$gptg" train "$out/base.toml" --quiet --set data.path="builtin:$corpus" --set data.tokenizer="$tok" \
				--set data.vocab_size="$size" --set train.out="$run" >"$run.log" 2>&1 || true
		fi
		if [ ! -f "$run/model.safetensors" ]; then
			# A vocabulary the corpus cannot make (a small text runs out of
			# pairs to merge) is a dash; anything else stops the script.
			grep -q "pairs run out" "$run.log" || { echo "$corpus $kind failed: $(tail -1 "$run.log")" >&2; exit 1; }
			row="$row | — ($(grep -o 'its pairs run out after [0-9]* merges' "$run.log"))"
			continue
		fi
		read -r per n < <(perToken "$run" --file "$text")
		row="$row | $per ($n)"
	done
	read -r per n < <(perToken --tokenizer gpt2 --file "$text")
	echo "$row | $per ($n) |"
done
echo "(bytes per token of the whole text, its tokens in brackets; gptg $(git rev-parse --short HEAD))"
