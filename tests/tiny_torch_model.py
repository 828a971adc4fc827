"""The tiny model configuration the PyTorch reference's tests share (torch_reference_test.py,
torch_train_loop_test.py): two layers with different k, so per-layer settings are exercised."""

TINY = {
    "layers": 2,
    "d_model": 16,
    "heads": 2,
    "ffn_dim": 32,
    "norm": "post",
    "layer_norm_eps": 1e-5,
    "attention": "linformer",
    "k_per_layer": [8, 4],
    "sharing": "headwise",
    "projection": "linear",
    "freeze_projection": False,
    "seq_len": 16,
    "vocab_size": 40,
}
