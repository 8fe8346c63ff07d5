/* Shared request/response vectors (fixtures/vectors): placeholder until the format is published. */
static int run_vectors(const char *dir)
{
    (void)dir;
    return 0;
}
