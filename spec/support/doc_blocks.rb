# frozen_string_literal: true

# The fenced ```ruby (or ```rb) blocks of a Markdown file, each with what spec/docs_spec.rb must do
# with it. A block is one of:
#
# - run (the default): evaluated by spec/support/docs_runner.rb, in order with the other
#   blocks of its page, against FakeProviders;
# - included: the line before its fence is `<!-- docs_spec: file PATH -->` and the block
#   is a verbatim part of PATH, a file a spec runs (an example, a fixture app's file, a
#   generator's template);
# - not run: its first line is the comment `# not run: REASON`, which the reader sees.
#
# `<!-- docs_spec: before RUBY -->` lines before a fence run RUBY first (to script what a
# FakeProvider answers, for example); `fake(:openai)` there is the openai provider's
# FakeProvider.
class DocBlocks
  Block = Struct.new(:path, :line, :code, :include_path, :skip_reason, :before, keyword_init: true) do
    def kind
      return :skip if skip_reason
      return :included if include_path

      :run
    end

    def where
      "#{path}:#{line}"
    end
  end

  DIRECTIVE = /\A\s*<!--\s*docs_spec:\s*(\w+)\s+(.*?)\s*-->\s*\z/
  FENCE_OPEN = /\A(\s*)```(?:ruby|rb)\s*\z/
  NOT_RUN = /\A#\s*not run:\s*(\S.*)\z/

  # @param path [String] the Markdown file
  # @return [Array<Block>]
  def self.parse(path, text = File.read(path))
    blocks = []
    directives = []
    lines = text.lines
    i = 0
    while i < lines.size
      line = lines[i]
      if (m = DIRECTIVE.match(line))
        directives << [m[1], m[2]]
      elsif (m = FENCE_OPEN.match(line))
        indent = m[1]
        first_line = i + 2 # 1-based, the line after the fence
        body = []
        i += 1
        until i >= lines.size || lines[i].match?(/\A\s*```\s*\z/)
          body << lines[i]
          i += 1
        end
        blocks << build(path, first_line, dedent(body, indent), directives)
        directives = []
      elsif !line.strip.empty?
        directives = []
      end
      i += 1
    end
    blocks
  end

  def self.build(path, line, code, directives)
    first = code.lines.first.to_s.strip
    includes = directives.select { |name, _| name == "file" }.map(&:last)
    befores = directives.select { |name, _| name == "before" }.map(&:last)
    unknown = directives.map(&:first) - %w[file before]
    raise ArgumentError, "#{path}:#{line}: unknown docs_spec directive #{unknown.first}" unless unknown.empty?

    Block.new(path: path, line: line, code: code, include_path: includes.last,
              skip_reason: NOT_RUN.match(first)&.[](1), before: befores)
  end

  def self.dedent(lines, indent)
    lines.map { |l| l.start_with?(indent) ? l.delete_prefix(indent) : l.lstrip }.join
  end
end
