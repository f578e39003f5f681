// A small benchmark driver over libllama (llama.cpp's C API), for tests_py/bench_model.py.
//
//   driver MODEL.gguf THREADS DECODE ID...
//
// loads MODEL.gguf (the CPU backends from the directory of libllama, loaded at run time),
// feeds the prompt token ids as one batch (prefill, then the greedy first token), then
// DECODE steps of one token each (greedy: argmax of the logits), and prints one JSON
// line: {"prefill_tok_s":..,"decode_tok_s":..,"ids":[first token, then DECODE more]}.
// No tokenizer and no sampler chain: the caller passes the same ids tether sees, and
// argmax here is the greedy choice tether makes with --temp 0 (the lowest id on ties).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int argmax(const float *logits, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODEL.gguf THREADS DECODE ID...\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    int threads = atoi(argv[2]), decode = atoi(argv[3]);
    int n = argc - 4;
    if (threads <= 0 || decode < 0) {
        fprintf(stderr, "driver: threads %s, decode %s: want positive numbers\n", argv[2], argv[3]);
        return 2;
    }
    llama_token *prompt = malloc(sizeof(llama_token) * n);
    for (int i = 0; i < n; i++) {
        char *end;
        long v = strtol(argv[4 + i], &end, 10);
        if (*end != 0 || v < 0) {
            fprintf(stderr, "driver: token id %d is \"%s\", want a non-negative integer\n", i, argv[4 + i]);
            return 2;
        }
        prompt[i] = (llama_token)v;
    }

    llama_log_set(quiet, NULL);
    // The backends (libggml-cpu-<arch>.so) sit next to libllama; load the best for this CPU.
    Dl_info info;
    if (!dladdr((void *)llama_backend_init, &info) || !info.dli_fname) {
        fprintf(stderr, "driver: cannot locate libllama\n");
        return 1;
    }
    char *dir = strdup(info.dli_fname);
    ggml_backend_load_all_from_path(dirname(dir));
    llama_backend_init();

    // An ABI check: default parameters as the header of this release documents them.
    struct llama_context_params cp = llama_context_default_params();
    struct llama_model_params mp = llama_model_default_params();
    if (cp.n_ctx != 512 || cp.n_batch != 2048 || cp.n_ubatch != 512 || cp.n_seq_max != 1 || mp.n_gpu_layers != -1 ||
        mp.vocab_only || !mp.use_extra_bufts) {
        fprintf(stderr, "driver: libllama's default parameters (n_ctx %u, n_batch %u, n_ubatch %u, n_seq_max %u) do not match llama.h: ABI mismatch\n",
                cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max);
        return 1;
    }
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "driver: cannot load %s\n", path);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int nv = llama_vocab_n_tokens(vocab);
    for (int i = 0; i < n; i++) {
        if (prompt[i] >= nv) {
            fprintf(stderr, "driver: token id %d at %d is outside the vocabulary (%d)\n", prompt[i], i, nv);
            return 2;
        }
    }
    cp.n_ctx = n + decode + 16;
    cp.n_batch = n;
    cp.n_ubatch = n;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "driver: cannot create a context\n");
        return 1;
    }

    int *out = malloc(sizeof(int) * (decode + 1));
    double t0 = now();
    if (llama_decode(ctx, llama_batch_get_one(prompt, n)) != 0) {
        fprintf(stderr, "driver: prefill failed\n");
        return 1;
    }
    llama_token tok = argmax(llama_get_logits_ith(ctx, -1), nv);
    double t1 = now();
    out[0] = tok;
    for (int i = 0; i < decode; i++) {
        if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) {
            fprintf(stderr, "driver: decode step %d failed\n", i);
            return 1;
        }
        tok = argmax(llama_get_logits_ith(ctx, -1), nv);
        out[i + 1] = tok;
    }
    double t2 = now();
    printf("{\"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, \"ids\": [", n / (t1 - t0), decode / (t2 - t1));
    for (int i = 0; i <= decode; i++) printf(i ? ", %d" : "%d", out[i]);
    printf("]}\n");
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(dir);
    return 0;
}
