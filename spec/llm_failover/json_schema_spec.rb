# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "json"
require "llm_failover/llm_failover"

# The core's JSON Schema checker (lf_json_schema.h) as Tools::Runner asks it of a
# call's arguments: every problem with its path, in words a model can act on. The
# same checker checks answers (spec/json_spec.rb); test/c/test_json_schema.c has
# its own cases.
RSpec.describe LlmFailover::JsonSchema do
  def problems(schema, value)
    described_class.problems(JSON.generate(schema), JSON.generate(value))
  end

  it "takes JSON's integers as integers, 2.0 included, and any number as a number" do
    expect(problems({ type: "integer" }, 2.0)).to be_nil
    expect(problems({ type: "integer" }, 2.5)).to eq("$: expected integer, got number 2.5")
    expect(problems({ type: "number" }, 2)).to be_nil
    expect(problems({ type: "boolean" }, "true")).to eq('$: expected boolean, got string "true"')
    expect(problems({ type: "null" }, nil)).to be_nil
  end

  it "takes a list of types" do
    expect(problems({ type: %w[string null] }, nil)).to be_nil
    expect(problems({ type: %w[string null] }, 1)).to eq("$: expected string or null, got integer 1")
  end

  it "checks extra keys against an additionalProperties schema, and allows them when it is absent" do
    schema = { type: "object", properties: {}, additionalProperties: { type: "integer" } }
    expect(problems(schema, { "a" => 1, "b" => "x" })).to eq('$.b: expected integer, got string "x"')
    expect(problems({ type: "object" }, { "anything" => [1] })).to be_nil
    expect(problems({ type: "object", properties: {}, additionalProperties: false }, { "a" => 1 }))
      .to eq("$.a: unknown property (none are allowed)")
  end

  it "walks nested objects and arrays, naming the path" do
    schema = { type: "object", required: ["rows"],
               properties: { rows: { type: "array", items: { type: "object", required: ["id"],
                                                             properties: { id: { type: "integer" } } } } } }
    expect(problems(schema, { "rows" => [{ "id" => 1 }, {}, { "id" => "2" }] }))
      .to eq('$.rows[1].id: missing required property; $.rows[2].id: expected integer, got string "2"')
  end

  it "reports the anyOf branch that came closest" do
    schema = { anyOf: [{ type: "string", enum: %w[pending done] }, { type: "null" }] }
    expect(problems(schema, "done")).to be_nil
    expect(problems(schema, nil)).to be_nil
    expect(problems(schema, "later")).to eq(
      '$: matches none of the 2 allowed shapes (anyOf); closest: $: "later" is not one of "pending", "done"'
    )
  end

  it "ignores keywords outside its subset, and stops at ten problems" do
    expect(problems({ type: "string", format: "date", minLength: 99 }, "x")).to be_nil
    schema = { type: "object", properties: {}, additionalProperties: false }
    expect(problems(schema, (1..20).to_h { |i| ["k#{i}", i] }).split("; ").size).to eq(10)
  end

  it "says when the value is not standard JSON" do
    expect(described_class.problems('{"type":"object"}', "{'a': 1}")).to eq("$: not standard JSON (RFC 8259)")
  end
end
