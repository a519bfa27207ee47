// The library that sym_cxx_main.cpp calls into.
#ifndef SYM_CXX_H
#define SYM_CXX_H

namespace demo
{
namespace inner
{
extern void *seen; // the return address of the innermost call, in the library
int compute(int x);
} // namespace inner
} // namespace demo

#endif
