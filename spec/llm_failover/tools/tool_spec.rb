# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../lib", __dir__)
require "llm_failover/tools/toolbox"
require "support/tool_wire"

# The Tool class DSL and the schema it produces, held against the schemas real
# providers accepted in the recordings.
module ToolSpecTools
  class Weather < LlmFailover::Tool
    description "Gets current weather for a location"
    param :latitude, type: :string, desc: "Latitude (e.g., 52.5200)"
    param :longitude, type: :string, desc: "Longitude (e.g., 13.4050)"
    def execute(latitude:, longitude:) = "Current weather at #{latitude}, #{longitude}: 15°C"
  end

  class BestLanguageToLearn < LlmFailover::Tool
    description "Gets the best language to learn"
    def execute = "Ruby"
  end

  class ArrayParams < LlmFailover::Tool
    description "Uses params DSL array support"
    param :tags, type: :array, items: :string, desc: "List of tags to combine"
    def execute(tags:) = tags.join(",")
  end

  class AnyOfParams < LlmFailover::Tool
    description "Uses params DSL any_of support"
    params type: "object",
           properties: {
             task: { type: "string", description: "Task description" },
             status: { description: "Optional task status",
                       anyOf: [{ type: "string", enum: %w[pending done] }, { type: :null }] }
           },
           required: %w[task status], additionalProperties: false
    def execute(task:, status:) = "#{task}: #{status}"
  end

  class HTTPLookup < LlmFailover::Tool
    idempotent!
    requires_approval!
    def execute = "ok"
  end
end

RSpec.describe LlmFailover::Tool do
  # The input_schema of the tool named +name+ in the first Anthropic recording that
  # offers it, without ruby_llm's own "strict" key (not JSON Schema).
  def recorded_schema(name)
    ToolWire.recordings.each do |rec|
      rec["interactions"].each do |i|
        next unless i["request"]["api"] == "anthropic"

        tool = (JSON.parse(i["request"]["body"])["tools"] || []).find { |t| t["name"] == name }
        return tool["input_schema"].except("strict") if tool
      end
    end
    raise "no recording offers #{name}"
  end

  it "produces the schemas providers accepted in the recordings, from param and from params" do
    expect(ToolSpecTools::Weather.schema).to eq(recorded_schema("weather"))
    expect(ToolSpecTools::BestLanguageToLearn.schema).to eq(recorded_schema("best_language_to_learn"))
    expect(ToolSpecTools::ArrayParams.schema).to eq(recorded_schema("array_params"))
    expect(ToolSpecTools::AnyOfParams.schema).to eq(recorded_schema("any_of_params"))
  end

  it "names a tool after its class in snake_case without its modules, unless tool_name says otherwise" do
    expect(ToolSpecTools::Weather.tool_name).to eq("weather")
    expect(ToolSpecTools::BestLanguageToLearn.new.name).to eq("best_language_to_learn")
    expect(ToolSpecTools::HTTPLookup.tool_name).to eq("http_lookup")
    named = Class.new(described_class) { tool_name :get_weather }
    expect(named.tool_name).to eq("get_weather")
    expect(described_class.default_name("A::B::GetV2Weather")).to eq("get_v2_weather")
  end

  it "describes its arguments, optional ones and enums included, with a frozen schema" do
    tool = Class.new(described_class) do
      tool_name "weather"
      description "Current weather for a city"
      param :city, type: :string, desc: "City name"
      param :unit, type: :string, enum: %i[c f], required: false
      param :days, type: :integer, required: false
      def execute(city:, unit: "c", days: 1) = [city, unit, days]
    end
    expect(tool.schema).to eq(
      "type" => "object",
      "properties" => { "city" => { "type" => "string", "description" => "City name" },
                        "unit" => { "type" => "string", "enum" => %w[c f] },
                        "days" => { "type" => "integer" } },
      "required" => ["city"], "additionalProperties" => false
    )
    expect(tool.schema).to be_frozen
    expect(tool.schema["properties"]["unit"]["enum"]).to be_frozen
    expect(tool.description).to eq("Current weather for a city")
  end

  it "redeclaring a param replaces it, and a subclass starts from its parent's params under its own name" do
    parent = Class.new(described_class) do
      tool_name "parent"
      param :a, type: :string
      param :a, type: :integer, required: false
      idempotent!
      def execute(**) = "x"
    end
    expect(parent.schema["properties"]["a"]).to eq("type" => "integer")
    expect(parent.schema["required"]).to eq([])
    child = Class.new(parent) { param :b, type: :boolean }
    expect(child.schema["properties"].keys).to eq(%w[a b])
    expect(parent.schema["properties"].keys).to eq(%w[a])
    expect(child.idempotent?).to be(true)
    expect(child.tool_name).to be_nil # anonymous, and a parent's explicit name is not inherited
  end

  it "says whether a tool is idempotent and needs approval" do
    expect(ToolSpecTools::HTTPLookup.new).to have_attributes(idempotent?: true, requires_approval?: true)
    expect(ToolSpecTools::Weather.new).to have_attributes(idempotent?: false, requires_approval?: false)
  end

  describe "names" do
    it "takes the providers' names, up to 64 of letters, digits, _ and -" do
      expect(Class.new(described_class) { tool_name "a" * 64 }.tool_name.size).to eq(64)
      expect(Class.new(described_class) { tool_name "get-weather_2" }.tool_name).to eq("get-weather_2")
    end

    it "refuses any other name where it is written, naming the tool" do
      ["a" * 65, "get weather", "météo", "", "a.b"].each do |bad|
        expect { Class.new(described_class) { tool_name bad } }
          .to raise_error(ArgumentError, /tool name #{Regexp.escape(bad.inspect)} must be 1 to 64 of A-Z a-z 0-9 _ -/)
      end
    end

    it "refuses, when the tool is resolved, a class whose name cannot be a tool name" do
      anonymous = Class.new(described_class) { def execute = 1 }
      expect { described_class.resolve(anonymous) }.to raise_error(ArgumentError, /has no tool name/)
      long = Class.new(described_class) { def execute = 1 }
      stub_const("ToolSpecTools::#{'Very' * 17}Long", long)
      expect { described_class.resolve(long) }.to raise_error(ArgumentError, /VeryVery.*tool name "very_very.*" must be 1 to 64/)
    end
  end

  describe ".resolve" do
    it "takes a class (built without arguments) or an instance" do
      expect(described_class.resolve(ToolSpecTools::Weather)).to be_a(ToolSpecTools::Weather)
      instance = ToolSpecTools::Weather.new
      expect(described_class.resolve(instance)).to equal(instance)
    end

    it "asks for an instance when the class needs arguments to be built" do
      needy = Class.new(described_class) do
        tool_name "orders"
        def initialize(user)
          super()
          @user = user
        end

        def execute = @user
      end
      expect { described_class.resolve(needy) }.to raise_error(ArgumentError, /cannot be built without arguments.*pass an instance/)
      expect(described_class.resolve(needy.new("ann")).execute).to eq("ann")
    end

    it "refuses what is not a tool, and a tool without #execute" do
      expect { described_class.resolve(String) }.to raise_error(ArgumentError, /LlmFailover::Tool subclass or an instance/)
      expect { described_class.resolve(:weather) }.to raise_error(ArgumentError, /got :weather/)
      idle = Class.new(described_class) { tool_name "idle" }
      expect { described_class.resolve(idle) }.to raise_error(ArgumentError, /tool "idle"\) does not define #execute/)
    end
  end

  describe "DSL mistakes" do
    def tool(&block)
      Class.new(described_class) do
        tool_name "t"
        class_eval(&block)
      end
    end

    it "refuses a bad type, desc, enum, required or an array without items" do
      expect { tool { param :a, type: :str } }.to raise_error(ArgumentError, /param a: type must be one of string, integer/)
      expect { tool { param :a, type: :string, desc: 5 } }.to raise_error(ArgumentError, /desc must be a String/)
      expect { tool { param :a, type: :string, enum: [] } }.to raise_error(ArgumentError, /enum must be a non-empty Array/)
      expect { tool { param :a, type: :integer, enum: [1, "2"] } }.to raise_error(ArgumentError, /enum value "2": \$: expected integer/)
      expect { tool { param :a, type: :string, required: nil } }.to raise_error(ArgumentError, /required must be true or false/)
      expect { tool { param :a, type: :array } }.to raise_error(ArgumentError, /an array needs items:/)
      expect { tool { param "", type: :string } }.to raise_error(ArgumentError, /param name is a non-empty/)
      expect(tool { param :a, type: :array, items: { type: :object, properties: { b: { type: :string } } } }
               .schema.dig("properties", "a", "items")).to eq("type" => "object", "properties" => { "b" => { "type" => "string" } })
    end

    it "refuses params that do not describe an object, and param mixed with params" do
      expect { tool { params type: "array" } }.to raise_error(ArgumentError, /must describe an object/)
      expect { tool { params "nope" } }.to raise_error(ArgumentError, /takes a JSON Schema Hash/)
      expect { tool { params properties: [] } }.to raise_error(ArgumentError, /properties must be an object/)
      expect { tool { param(:a, type: :string); params(properties: {}) } }.to raise_error(ArgumentError, /either param or params/)
      expect { tool { params(properties: {}); param(:a, type: :string) } }.to raise_error(ArgumentError, /either param or params/)
      expect(tool { params(properties: { a: { type: :string } }) }.schema)
        .to eq("type" => "object", "properties" => { "a" => { "type" => "string" } })
    end

    it "refuses a description that is not text" do
      expect { tool { description 5 } }.to raise_error(ArgumentError, /description must be a String/)
    end
  end
end

RSpec.describe LlmFailover::Tools::Toolbox do
  it "holds tools by name in order and lists what the wire layer renders" do
    box = described_class.new.add(ToolSpecTools::Weather, ToolSpecTools::BestLanguageToLearn.new)
    expect(box.names).to eq(%w[weather best_language_to_learn])
    expect(box["weather"]).to be_a(ToolSpecTools::Weather)
    expect(box.definitions.first).to eq("name" => "weather", "description" => "Gets current weather for a location",
                                        "schema" => ToolSpecTools::Weather.schema)
  end

  it "takes the same tool twice, refuses two tools with one name and keeps what it had" do
    box = described_class.new.add(ToolSpecTools::Weather).add(ToolSpecTools::Weather)
    expect(box.size).to eq(1)
    impostor = Class.new(LlmFailover::Tool) do
      tool_name "weather"
      def execute = 1
    end
    expect { box.add(ToolSpecTools::ArrayParams, impostor) }.to raise_error(ArgumentError, /two tools are named "weather"/)
    expect(box.names).to eq(["weather"])
  end
end
