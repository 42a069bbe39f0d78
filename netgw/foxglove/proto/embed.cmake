# Writes the FileDescriptorSet IN (protoc --descriptor_set_out) as a C
# array into OUT, so pa-netgw carries the schemas it advertises.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from ${IN} by embed.cmake */\n"
  "#include <stddef.h>\n"
  "const unsigned char pa_fox_fds[] = {${bytes}};\n"
  "const size_t pa_fox_fds_len = sizeof pa_fox_fds;\n")
