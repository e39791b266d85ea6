# cmake -DSPV=x.spv -DOUT=x.spv.cpp -DNAME=x -P embed_spirv.cmake
# Writes the SPIR-V of SPV as `extern const uint32_t gl_vk_spv_NAME[]` and its word count. glslc
# writes little-endian words, so each group of four bytes is reversed into one hex literal.
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n_hex)
math(EXPR n_words "${n_hex} / 8")
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n" body "${body}")
file(WRITE ${OUT} "// Generated from ${NAME}.comp by embed_spirv.cmake; do not edit.\n#include <cstddef>\n#include <cstdint>\n"
  "extern const uint32_t gl_vk_spv_${NAME}[];\nextern const size_t gl_vk_spv_${NAME}_words;\n"
  "const uint32_t gl_vk_spv_${NAME}[] = {\n${body}};\nconst size_t gl_vk_spv_${NAME}_words = ${n_words};\n")
