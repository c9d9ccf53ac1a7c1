# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "llm_failover/tools/argument_check"

RSpec.describe LlmFailover::Tools::ArgumentCheck do
  def problems(schema, value)
    described_class.new(JSON.parse(JSON.generate(schema))).problems(value)
  end

  it "takes JSON's integers as integers, 2.0 included, and any number as a number" do
    expect(problems({ type: "integer" }, 2.0)).to eq([])
    expect(problems({ type: "integer" }, 2.5)).to eq(["expected integer, got number 2.5"])
    expect(problems({ type: "number" }, 2)).to eq([])
    expect(problems({ type: "boolean" }, "true")).to eq(['expected boolean, got string "true"'])
    expect(problems({ type: "null" }, nil)).to eq([])
  end

  it "takes a list of types" do
    expect(problems({ type: %w[string null] }, nil)).to eq([])
    expect(problems({ type: %w[string null] }, 1)).to eq(["expected string or null, got integer 1"])
  end

  it "checks extra keys against an additionalProperties schema, and allows them when it is absent" do
    schema = { type: "object", properties: {}, additionalProperties: { type: "integer" } }
    expect(problems(schema, { "a" => 1, "b" => "x" })).to eq(['b: expected integer, got string "x"'])
    expect(problems({ type: "object" }, { "anything" => [1] })).to eq([])
    expect(problems({ type: "object", properties: {}, additionalProperties: false }, { "a" => 1 }))
      .to eq(["a: unknown parameter (it takes none)"])
  end

  it "walks nested objects and arrays, naming the path" do
    schema = { type: "object", required: ["rows"],
               properties: { rows: { type: "array", items: { type: "object", required: ["id"],
                                                             properties: { id: { type: "integer" } } } } } }
    expect(problems(schema, { "rows" => [{ "id" => 1 }, {}, { "id" => "2" }] }))
      .to eq(["rows[1].id: missing required parameter", 'rows[2].id: expected integer, got string "2"'])
  end

  it "reports the anyOf branch that came closest" do
    schema = { anyOf: [{ type: "string", enum: %w[pending done] }, { type: "null" }] }
    expect(problems(schema, "done")).to eq([])
    expect(problems(schema, nil)).to eq([])
    expect(problems(schema, "later")).to eq(
      ['matches none of the 2 allowed shapes (anyOf); closest: "later" is not one of "pending", "done"']
    )
  end

  it "ignores keywords outside its subset, and stops at ten problems" do
    expect(problems({ type: "string", format: "date", minLength: 99 }, "x")).to eq([])
    schema = { type: "object", properties: {}, additionalProperties: false }
    expect(problems(schema, (1..20).to_h { |i| ["k#{i}", i] }).size).to eq(10)
  end
end
