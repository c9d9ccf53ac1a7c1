# frozen_string_literal: true

module LlmFailover
  module Generators
    # The tables and columns an app's migrations (and its db/schema.rb) create or
    # add (create_table and change_table blocks, add_column, add_reference), read
    # from their source: what llm_failover:upgrade compares the additions with. Read
    # from files rather than the database so that a migration written and not yet run
    # counts (a second run of the generator adds nothing), and so that it works where
    # the database is out of reach. Removals are not followed: a down method's
    # drop_table is not told apart from an up's.
    class KnownSchema
      TABLE_BLOCK = /\b(?:create|change)_table\s*\(?\s*[:"']([\w.]+)/
      COLUMN = /\A\s*t\.(\w+)\s*\(?\s*[:"'](\w+)/
      # t.<these> in a table block name no column it adds.
      NOT_ADDED = %w[index remove remove_index remove_references remove_belongs_to remove_timestamps rename change
                     change_default change_null].freeze
      ADD_COLUMN = /\badd_(column|reference|belongs_to)\s*\(?\s*[:"']([\w.]+)["']?\s*,\s*[:"'](\w+)/
      REFERENCE = %w[references belongs_to reference].freeze

      # @param files [Array<String>] paths of migrations and schema.rb
      # @return [Hash{String => Array<String>}] table name => its columns
      def self.read(files)
        new.tap { |schema| files.each { |f| schema.parse(File.read(f)) } }.tables
      end

      # @return [Hash{String => Array<String>}] table name => its columns
      attr_reader :tables

      def initialize
        @tables = {}
      end

      # Adds what +source+ creates.
      # @return [self]
      def parse(source)
        current = nil
        source.each_line do |line|
          if (m = line.match(TABLE_BLOCK))
            current = table(m[1])
          elsif current && line.match?(/\A\s*end\b/)
            current = nil
          elsif current && (m = line.match(COLUMN))
            current << column(m[1], m[2]) unless NOT_ADDED.include?(m[1])
          elsif (m = line.match(ADD_COLUMN))
            table(m[2]) << column(m[1], m[3])
          end
        end
        self
      end

      private

      def table(name)
        @tables[name.delete_prefix("public.")] ||= []
      end

      def column(kind, name)
        REFERENCE.include?(kind) ? "#{name}_id" : name
      end
    end
  end
end
