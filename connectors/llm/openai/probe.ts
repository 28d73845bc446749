/** Any server that is not of a more specific kind is spoken to as an OpenAI-compatible one: the last probe, always true. */
export const probeOpenAi = async (): Promise<boolean> => true;
