"""mhac from Python: compile multi-head attention layers ahead of time and call them on NumPy
arrays and PyTorch CPU tensors.

    import torch, mhac
    mha = torch.nn.MultiheadAttention(768, 12, batch_first=True).eval()
    layer = mhac.from_torch(mha)
    y = layer(torch.randn(8, 128, 768))

    module = mhac.compile("layer bert { model_dim = 768\\n heads = 12\\n seq = ? }")
    y = module.bert.load_weights("weights.safetensors")(x)
"""

from ._cache import KVCache
from ._compile import CompileWarning, Module, compile, load
from ._errors import CompileError, Error, RunError, WeightError
from ._layer import Layer
from ._runtime import get_num_threads, set_num_threads
from ._specs import config_layer_text, from_hf, from_torch, layer_text, torch_layer_text

__all__ = [
    "CompileError", "CompileWarning", "Error", "KVCache", "Layer", "Module", "RunError",
    "WeightError", "compile", "config_layer_text", "from_hf", "from_torch", "get_num_threads",
    "layer_text", "load", "set_num_threads", "torch_layer_text",
]
