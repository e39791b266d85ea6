// ggml-lite.h - everything a user of the core needs.
//
//   #include <ggml-lite/ggml-lite.h>
#pragma once

#include "ggml-lite/backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/dtype.h"
#include "ggml-lite/ops.h"
#include "ggml-lite/status.h"
#include "ggml-lite/tensor.h"
