/* `cudafrag import SNAPSHOT.pickle`: a PyTorch memory snapshot
 * (torch.cuda.memory._dump_snapshot) turned into a cudafrag trace, so that
 * `cudafrag report` and `cudafrag replay` read the tensor-level allocations
 * of PyTorch's caching allocator. */
#ifndef CF_CLI_SNAPSHOT_IMPORT_H
#define CF_CLI_SNAPSHOT_IMPORT_H

/* argv: "import" and its arguments. Returns the command's exit status. */
int cf_cmd_import(int argc, char **argv);

#endif
