"""Upstream source URLs, pinned to the commits whose code was read (via the stored-source search).

Every rule cites one of these; the commit in each URL is the version the rule's condition and message
were checked against.
"""

VLLM = "https://github.com/vllm-project/vllm/blob"
SGLANG = "https://github.com/sgl-project/sglang/blob"
HF = "https://github.com/huggingface/transformers/blob"
TRT = "https://github.com/NVIDIA/TensorRT-LLM/blob"
MEGATRON = "https://github.com/NVIDIA/Megatron-LM/blob"

VLLM_MODEL_CONFIG = f"{VLLM}/0052a5b818980ce8a0477706aaf9f75bd5af72cd/vllm/config/model.py"
VLLM_LINEAR = f"{VLLM}/9e109c9887e38c51fc16b0da89760c5bd7c293c9/vllm/model_executor/layers/linear.py"
VLLM_DIST_UTILS = f"{VLLM}/5a6541db9bfa77756459722f69e8c89a0b47a14d/vllm/distributed/utils.py"
VLLM_VOCAB = (
    f"{VLLM}/7f5d141a0abde5fdedc220f55d9f19831c9a5b9e/vllm/model_executor/layers/vocab_parallel_embedding.py"
)
VLLM_FP8 = f"{VLLM}/1436674bcb3f46f4c960d09334cf7dd1534943ca/vllm/model_executor/layers/quantization/fp8.py"
VLLM_FP8_UTILS = (
    f"{VLLM}/364d01925de309b50c726941ad93a2c0a2487df8/vllm/model_executor/layers/quantization/utils/fp8_utils.py"
)
VLLM_GPTQ = f"{VLLM}/e5dd90be38faf08d3f841f7ef1f4d7e64a70147d/vllm/model_executor/layers/quantization/gptq.py"
VLLM_FUSED_MOE = f"{VLLM}/c439a139790cafaecb54e8dea123b78049f1442b/vllm/model_executor/layers/fused_moe/layer.py"
VLLM_DSV4 = f"{VLLM}/f1b76c19a8f7fc2f2a8ce2918533933128a3b22a/vllm/model_executor/models/deepseek_v4.py"
VLLM_MAMBA2 = f"{VLLM}/bb435dbd5899c5374d29f6383bb49fe8a6a814ef/vllm/model_executor/layers/mamba/mamba_mixer2.py"
VLLM_GLM4V = f"{VLLM}/9ba7fb9beac8a3d6b70cd032a5e6bfafa8609a0a/vllm/model_executor/models/glm4_1v.py"
VLLM_QWEN3_NEXT = f"{VLLM}/6365b387890f7aa74b0fe65b81705d4730fcc763/vllm/model_executor/models/qwen3_next.py"

SGLANG_LINEAR = f"{SGLANG}/98b3b24a0f06906a345ec3991fd9151af8bcddff/python/sglang/srt/layers/linear.py"
SGLANG_DP_ATTN = f"{SGLANG}/2aa2e2d0ffda0a44ed9a022fdd9d5d042f365eee/python/sglang/srt/layers/dp_attention.py"
SGLANG_VISION = f"{SGLANG}/ba8af6fc801bd744ac3ab029c474500ff0c45cb0/python/sglang/srt/layers/attention/vision.py"
SGLANG_KIMI_LINEAR = f"{SGLANG}/31a8180f1fad16f849310bcceb47ab63cd90407f/python/sglang/srt/models/kimi_linear.py"
SGLANG_MLLAMA = f"{SGLANG}/82ff69c6edab47a57dd612fe8f78638749d70f8d/python/sglang/srt/models/mllama.py"
SGLANG_FP8_UTILS = (
    f"{SGLANG}/6082c49139ac8f1c99a835840de73971faa15e8e/python/sglang/srt/layers/quantization/fp8_utils.py"
)
SGLANG_FP8 = f"{SGLANG}/d94a1535900da43cb374c2445679375e78935af6/python/sglang/srt/layers/quantization/fp8.py"
SGLANG_VOCAB = (
    f"{SGLANG}/d457d82560472d09009c5013dfa0eb437dc20013/python/sglang/srt/layers/vocab_parallel_embedding.py"
)
SGLANG_MOE_UTILS = f"{SGLANG}/d737979cbd17c6162f39c1953cfa72d3d23cc0d0/python/sglang/srt/layers/moe/utils.py"

HF_CB_CACHE = f"{HF}/v5.24.0/src/transformers/generation/continuous_batching/cache.py#L146-L152"
#: Column-wise sharding splits out_features without a divisibility check (v5.24.0, lines 140-147) ...
HF_TP = f"{HF}/v5.24.0/src/transformers/distributed/tensor_parallel.py#L140-L147"
#: ... and the attention reshape that fails when a rank holds a partial head (v5.24.0, lines 242-246).
HF_LLAMA_ATTN = f"{HF}/v5.24.0/src/transformers/models/llama/modeling_llama.py#L242-L246"

# TensorRT-LLM: read from the stored source index (the PyPI 1.2.1 upload is a wheel_stub sdist that fetches the
# wheel from pypi.nvidia.com, unreachable here, and the index holds main-branch commits, not the v1.2.1 tree).
#: ``Mapping.__init__``: moe_tp_size = tp_size // (moe_ep_size * moe_cluster_size) (L142-143), then the ValueError.
TRT_MAPPING = f"{TRT}/05ebebb2c1d34320db9019f2b7ace6009a67e997/tensorrt_llm/mapping.py#L175-L180"
#: ``Attention.__init__``: tp_size = 1 under enable_attention_dp; bare ``assert self.num_heads % tp_size == 0`` at
#: this commit; later stored versions (with Helix context parallelism) assert ``% (tp_size * cp_size)``.
TRT_ATTENTION = f"{TRT}/c6d3bb2aae305e0b5ac1b97b7954dcf87d653322/tensorrt_llm/_torch/modules/attention.py"
#: ``MLA.__init__`` (moved out of attention.py): the same bare assert.
TRT_MLA = f"{TRT}/c0261efa8a466afd645d71ffe1d1867e81e19303/tensorrt_llm/_torch/modules/mla.py"
#: ``Linear.__init__``: ``assert out_features % self.tp_size == 0, f'out_features ... must be divisible by tp_size ...'``
#: (COLUMN) / ``in_features`` (ROW).
TRT_LINEAR = f"{TRT}/ed53795b33fc139493f762a1c6c53f691cf52d38/tensorrt_llm/_torch/modules/linear.py"
#: ``GatedMLP.__init__``: gate_up_proj = Linear(hidden, 2 * intermediate, COLUMN) (L65-71), down_proj ROW (L80-86).
TRT_GATED_MLP = f"{TRT}/01503f5535c0379da60bfd282d225626813781ab/tensorrt_llm/_torch/modules/gated_mlp.py#L65-L86"
#: ``duplicate_kv_weight``: bare ``assert num_kv_heads % tensor_parallel_size == 0`` (L101) / ``assert
#: tensor_parallel_size % num_kv_heads == 0`` (L104) at weight load.
TRT_KV_DUP = f"{TRT}/000a01de66f0eab4ab05640711f0253f50f5209c/tensorrt_llm/_torch/models/modeling_utils.py#L97-L104"
#: ``MoE.__init__``: ``intermediate_size_per_partition = intermediate_size // self.tp_size`` (floor, no check). The
#: bare ``assert self.num_experts % self.ep_size == 0`` of ``_init_load_balancer`` (no EPLB) is in a later stored
#: version of this file (index id 3744845622, commit not recorded), not at this commit.
TRT_MOE = f"{TRT}/567239fcd40bda119965a3a8abf43856c63c9527/tensorrt_llm/_torch/modules/fused_moe/interface.py"

MEGATRON_TCONFIG = (
    f"{MEGATRON}/d2c5e8b4f4fa0062d8cd9cbe18a7fca7cf1f99a3/megatron/core/transformer/transformer_config.py"
)
MEGATRON_TBLOCK = (
    f"{MEGATRON}/767a8a81dce870c23d284f1571fca1d5898d624d/megatron/core/transformer/transformer_block.py"
)
MEGATRON_TBLOCK_HEAD = (
    f"{MEGATRON}/d98e8a64ddf34856e74b24714e3bedb2f5a39553/megatron/core/transformer/transformer_block.py#L156-L158"
)
MEGATRON_TOKENIZER = (
    f"{MEGATRON}/def3b9c0cbf1920176504a3dff3eef774d90cd36/megatron/training/tokenizer/tokenizer.py"
)
