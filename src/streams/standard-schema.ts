/**
 * The Standard Schema interface (https://standardschema.dev), which zod 4, valibot and arktype
 * schemas implement: what `Serdes.json(schema)` validates with. The spec asks libraries to copy
 * these types rather than depend on a package for them; only what the serdes use is copied.
 */

/** A schema that validates unknown values and types its output. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": StandardSchemaProps<Input, Output>;
}

export interface StandardSchemaProps<Input, Output> {
  readonly version: 1;
  readonly vendor: string;
  readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
  readonly types?: { readonly input: Input; readonly output: Output } | undefined;
}

export type StandardResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: ReadonlyArray<StandardIssue> };

export interface StandardIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/** The type of what a schema accepts, as it returns it. */
export type SchemaOutput<S extends StandardSchemaV1> = NonNullable<S["~standard"]["types"]>["output"];
