#!/usr/bin/env bash
# bench/tokloss.sh: what the tokenizer does to the loss per character
# (docs/tokenization.md, "Bytes per token, and the loss per character").
#
#   bench/tokloss.sh
#
# Trains one model shape — configs/nanogpt/shakespeare-bpe.toml's: a
# pre-norm GPT, 4 blocks × 4 heads, embedding 128, context 64 tokens, batch
# 12, gptg's default training, 500 steps — on tiny-shakespeare's text
# (split 0.9 of the tokens) with each tokenizer: char, word, a BPE learned
# with 512 and with 2,048 tokens, and GPT-2's. A test loss is in nats per
# token, and a token is a different length of text for each: it is turned
# into nats per character with the test split's characters per token, from
# `gptg tokens RUN --file` over the whole text (the pieces' bytes summed
# over the test split's tokens; tiny-shakespeare is ASCII, a byte is a
# character). Word tokens leave out the whitespace between them: for them
# the test split's characters are its token bytes scaled by the whole
# text's characters over its token bytes.
#
# STEPS (default 500) shortens the trainings for a quick look. SEEDS
# (default "1 2 3"), JOBS (default 2) trainings at once, each niced;
# OUT (default a temporary folder) keeps the runs. About 25 minutes of one
# idle core a seed, most of it the two large vocabularies' (word, gpt2)
# output layers.
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=${SEEDS:-1 2 3}
steps=${STEPS:-500}
jobs=${JOBS:-2}
if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	out=$(cd "$OUT" && pwd)
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
go build -o "$out/gptg" ./cmd/gptg
gptg=$out/gptg
"$gptg" data export tinyshakespeare --out "$out/shake.txt" --force >/dev/null

cat >"$out/base.toml" <<'EOF'
[data]
path = "builtin:tinyshakespeare"
split = 0.9
[model]
context = 64
embedding = 128
blocks = 4
heads = 4
qkv = true
mask = true
out_proj = true
residual = true
norm = "pre"
activation = "gelu"
[train]
batch = 12
epochs = 1
max_steps = STEPS
EOF
sed -i "s/STEPS/$steps/" "$out/base.toml"

kinds="char word bpe-512 bpe-2048 gpt2"

# train KIND S: one training of tokenizer KIND at seed S, one thread.
train() {
	local kind=$1 seed=$2 tok=${1%%-*} size=0
	[ "$kind" != "$tok" ] && size=${kind#*-}
	local run=$out/runs/$kind-$seed
	[ -f "$run/model.safetensors" ] && return
	nice "$gptg" train "$out/base.toml" --threads 1 --set data.tokenizer="$tok" --set data.vocab_size="$size" \
		--set train.seed="$seed" --set train.out="$run" >"$run.log" 2>&1 || { echo "$kind seed $seed failed: $(tail -1 "$run.log")" >&2; exit 1; }
}
mkdir -p "$out/runs"
for seed in $seeds; do
	for kind in $kinds; do
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
		train "$kind" "$seed" &
	done
done
wait

# The test loss a run printed last ("test loss L over N batches").
testloss() { sed -n 's/.*test loss \([0-9.]*\) over.*/\1/p' "$1.log" | tail -1; }

printf '| tokenizer | vocabulary | parameters | bytes per token (whole text) | test tokens | test characters per token | test loss, nats per token | nats per character | bits per character |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for kind in $kinds; do
	first=$(set -- $seeds; echo "$1")
	# Tokens of the whole text, their bytes, and the test split's (the tokens from int(n × 0.9) on).
	read -r n vocab perTok testTok testBytes allBytes < <("$gptg" tokens "$out/runs/$kind-$first" --file "$out/shake.txt" | awk '
		/^ *[0-9]+ +[0-9]+ +[0-9]+ / { b[$1] = $3; n = $1 + 1 }
		/bytes per token/ { per = $(NF-6); vocab = $(NF-1) }
		END {
			cut = int(n * 0.9); tb = 0; all = 0
			for (i = 0; i < n; i++) { all += b[i]; if (i >= cut) tb += b[i] }
			printf "%d %s %s %d %d %d\n", n, vocab, per, n - cut, tb, all
		}')
	# Word tokens drop the whitespace: scale their bytes to the text's characters.
	chars=$(awk -v tb="$testBytes" -v all="$allBytes" -v size="$(wc -c <"$out/shake.txt")" 'BEGIN { printf "%.0f", tb * size / all }')
	params=$("$gptg" inspect "$out/runs/$kind-$first" | awk '$1 == "total" { print $2 }')
	losses=""
	for seed in $seeds; do losses="$losses $(testloss "$out/runs/$kind-$seed")"; done
	awk -v kind="$kind" -v vocab="$vocab" -v params="$params" -v per="$perTok" -v tt="$testTok" -v chars="$chars" -v losses="$losses" 'BEGIN {
		k = split(losses, l, " "); s = 0; for (i = 1; i <= k; i++) s += l[i]; mean = s / k
		v = 0; for (i = 1; i <= k; i++) v += (l[i] - mean)^2; sd = (k > 1) ? sqrt(v / (k - 1)) : 0
		cpt = chars / tt
		printf "| %s | %s | %s | %s | %d | %.3f | %.4f ± %.4f | %.4f ± %.4f | %.4f ± %.4f |\n", kind, vocab, params, per, tt, cpt, mean, sd, mean / cpt, sd / cpt, mean / cpt / log(2), sd / cpt / log(2)
	}'
done
echo "(mean ± sd over seeds $seeds; $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); gptg $(git rev-parse --short HEAD))"
