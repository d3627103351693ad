# WHALE_FUZZ: builds the libFuzzer harnesses of tests/fuzz (Clang only). Every target of the
# build is then compiled with libFuzzer's coverage instrumentation and AddressSanitizer +
# UndefinedBehaviorSanitizer, so that the loaders inside the libraries guide the fuzzer.
option(WHALE_FUZZ "build the libFuzzer harnesses of tests/fuzz (Clang only)" OFF)
if(WHALE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "WHALE_FUZZ needs Clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                        "configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
