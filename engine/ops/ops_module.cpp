// The loadable form of the detection operators (libmrcnn_ops.so): the kernels register
// themselves with the dispatcher from the whole mrcnn_ops_static archive linked in, so
// `torch.ops.load_library("libmrcnn_ops.so")` makes torch.ops.mrcnn.* callable from Python.
// Used by the GPU checks only; the product links the operators directly.
